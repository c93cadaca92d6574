// policy_loss.cu: PolicyLoss, the GRPO clipped policy-gradient loss with an
// optional k3 KL penalty, per token, and its derivative in logp. One thread
// per token (grid-stride). The arithmetic is float64: it costs nothing at
// one value per token, and it makes the clip decision (ratio·adv against
// clip(ratio)·adv) the same one the float64 CPU reference takes, so a
// clipped token's gradient is exactly 0 on both. The same decision and KL
// term go out per token (clip, kl), so the host need not recompute them
// from downloaded log-probs.
// nvcc -ptx -arch=compute_90 policy_loss.cu
#include "common.cuh"

GRPO_KERNEL void __launch_bounds__(256) policy_loss_f32(float* loss, float* dlogp, float* kl, float* clip, const float* logp,
				 const float* oldLogp, const float* refLogp, const float* adv, const float* weight, int n,
				 float epsLow, float epsHigh, float beta) {
	double lo = 1.0 - (double)epsLow, hi = 1.0 + (double)epsHigh;
	for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < n;
	     t += (long long)gridDim.x * blockDim.x) {
		double a = adv[t], w = weight[t], lp = logp[t];
		double ratio = exp(lp - (double)oldLogp[t]);
		double clipped = fmin(fmax(ratio, lo), hi);
		double pg = 0.0, dpg = 0.0;
		float side = 0.0f;
		if (ratio * a <= clipped * a) {
			pg = -ratio * a;
			dpg = pg;  // d(−ratio·a)/dlogp = −ratio·a
		} else {
			pg = -clipped * a;  // the clip is active: constant in logp
			side = ratio < lo ? -1.0f : 1.0f;
		}
		clip[t] = side;
		if (beta != 0.0f && refLogp && kl) {
			double d = (double)refLogp[t] - lp;
			double e = exp(d);
			double k = e - d - 1.0;
			kl[t] = (float)k;
			pg += (double)beta * k;
			dpg += (double)beta * (1.0 - e);
		}
		loss[t] = (float)(w * pg);
		dlogp[t] = (float)(w * dpg);
	}
}
