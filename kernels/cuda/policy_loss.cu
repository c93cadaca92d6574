// policy_loss.cu: PolicyLoss, the policy-gradient loss family (PPO clip,
// GSPO's sequence ratio, CISPO, prime-rl's DPPO+KL) with a truncated or
// masked behaviour correction, per token, and its derivative in logp. One
// block per sequence: the sequence-level quantities (GSPO's mean
// log-ratio, the sequence correction, Σ weight·ρ) are block sums in a
// fixed order, then each thread writes its tokens. The arithmetic is
// float64: it costs nothing at one value per token, and it makes the clip
// decisions the same ones the float64 CPU reference takes, so a clipped
// token's gradient is exactly 0 on both. The decisions, the mismatch and
// the KL terms go out per token, so the host need not recompute them
// from downloaded log-probs.
// nvcc -ptx -arch=compute_90 policy_loss.cu
#include "common.cuh"

// The values of kernels.PolicyObjective and kernels.ISCorrection.
#define OBJ_PPO 0
#define OBJ_GSPO 1
#define OBJ_CISPO 2
#define OBJ_DPPO 3
#define IS_NONE 0
#define IS_TOKEN_MASK 2
#define IS_SEQ_TRUNCATE 3
#define IS_SEQ_MASK 4

struct PolicyParams {
	int objective, is;
	double epsLow, epsHigh, beta, maskLow, maskHigh, advTau, klTau, isMin, isMax;
};

// correction is ρ for log-ratio d (the token's, or the sequence's sum in
// the sequence modes) and the side (±1) it was cut on.
__device__ __forceinline__ double correction(double d, const PolicyParams& p, float* side) {
	*side = 0.0f;
	if (p.is == IS_NONE) return 1.0;
	double rho = exp(d);
	if (rho > p.isMax) *side = 1.0f;
	else if (rho < p.isMin) *side = -1.0f;
	else return rho;
	if (p.is == IS_TOKEN_MASK || p.is == IS_SEQ_MASK) return 0.0;
	return fmin(fmax(rho, p.isMin), p.isMax);
}

// clipped is PPO's −min(r·a, clip(r)·a) with its derivative in log r
// (0 where the clip is active) and the side the clip cuts.
__device__ __forceinline__ double clipped(double r, double a, const PolicyParams& p, double* d, float* side) {
	double lo = 1.0 - p.epsLow, hi = 1.0 + p.epsHigh;
	double c = fmin(fmax(r, lo), hi);
	if (r * a <= c * a) {
		*d = -r * a;
		*side = 0.0f;
		return -r * a;
	}
	*d = 0.0;
	*side = r < lo ? -1.0f : 1.0f;
	return -c * a;
}

GRPO_KERNEL void __launch_bounds__(256) policy_loss_f32(float* loss, float* dlogp, float* clip, float* isClip, float* mismatch,
							float* kl, const float* logp, const float* oldLogp, const float* behaviour,
							const float* refLogp, const float* adv, const float* weight, const int* seqStart,
							int objective, int is, float epsLow, float epsHigh, float beta, float maskLow,
							float maskHigh, float advTau, float klTau, float isMin, float isMax) {
	GRPO_SHARED(double, scratch, [32]);
	PolicyParams p = {objective, is, epsLow, epsHigh, beta, maskLow, maskHigh, advTau, klTau, isMin, isMax};
	int lo = seqStart[blockIdx.x], hi = seqStart[blockIdx.x + 1];
	if (hi <= lo) return;  // the whole block leaves: no barrier is left waiting
	int seqMode = is == IS_SEQ_TRUNCATE || is == IS_SEQ_MASK;
	double sumLR = 0.0, sumD = 0.0, sumW = 0.0, sumWR = 0.0;
	for (int t = lo + threadIdx.x; t < hi; t += blockDim.x) {
		double d = (double)oldLogp[t] - (double)behaviour[t];
		float side;
		sumLR += (double)logp[t] - (double)oldLogp[t];
		sumD += d;
		sumW += weight[t];
		if (!seqMode) sumWR += (double)weight[t] * correction(d, p, &side);
	}
	sumLR = block_sum_f64(sumLR, scratch);
	sumD = block_sum_f64(sumD, scratch);
	sumW = block_sum_f64(sumW, scratch);
	sumWR = block_sum_f64(sumWR, scratch);
	double n = (double)(hi - lo);
	float seqSide = 0.0f;
	double seqRho = correction(sumD, p, &seqSide);
	if (seqMode) sumWR = seqRho * sumW;
	double gspo = 0.0, gspoGrad = 0.0;
	float gspoSide = 0.0f;
	if (objective == OBJ_GSPO) {
		double d;
		gspo = clipped(exp(sumLR / n), (double)adv[lo], p, &d, &gspoSide);
		gspoGrad = sumWR * d / n;
	}
	for (int t = lo + threadIdx.x; t < hi; t += blockDim.x) {
		double lp = logp[t], a = adv[t], w = weight[t], bh = behaviour[t];
		float isSide = seqSide;
		double rho = seqMode ? seqRho : correction((double)oldLogp[t] - bh, p, &isSide);
		double pg = 0.0, dpg = 0.0;
		float side = 0.0f;
		if (objective == OBJ_PPO) {
			pg = clipped(exp(lp - (double)oldLogp[t]), a, p, &dpg, &side);
		} else if (objective == OBJ_GSPO) {
			pg = gspo;
			side = gspoSide;
		} else if (objective == OBJ_CISPO) {
			double r = exp(lp - (double)oldLogp[t]);
			double c = fmin(r, p.epsHigh);
			if (c < r) side = 1.0f;
			pg = -c * a * lp;
			dpg = -c * a;
		} else {  // DPPO
			double lb = lp - bh, r = exp(lb), dp = exp(lp) - exp(bh), keep = 1.0;
			if (a > 0.0 && dp > p.maskHigh) {
				keep = 0.0;
				side = 1.0f;
			} else if (a <= 0.0 && dp < -p.maskLow) {
				keep = 0.0;
				side = -1.0f;
			}
			double aa = p.advTau * a;
			pg = -keep * aa * r + p.klTau * lb * lb;
			dpg = -keep * aa * r + 2.0 * p.klTau * lb;
		}
		double lb = lp - bh;
		mismatch[t] = (float)(exp(lb) - lb - 1.0);
		clip[t] = side;
		isClip[t] = isSide;
		double k = 0.0, dk = 0.0;
		if (beta != 0.0f && refLogp && kl) {
			double d = (double)refLogp[t] - lp, e = exp(d);
			k = e - d - 1.0;
			dk = 1.0 - e;
			kl[t] = (float)k;
		}
		loss[t] = (float)(w * (rho * pg + p.beta * k));
		dlogp[t] = (float)(objective == OBJ_GSPO ? gspoGrad + w * p.beta * dk : w * (rho * dpg + p.beta * dk));
	}
}
