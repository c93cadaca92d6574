// adamw.cu: one AdamW step (torch.optim.AdamW, decoupled weight decay),
// elementwise with a grid-stride loop. The bias corrections depend only on
// the step, so the host computes them in float64 and passes
// stepSize = lr/(1−β1^t) and bc2Sqrt = √(1−β2^t), as torch does.
// nvcc -ptx -arch=compute_90 adamw.cu
#include "common.cuh"

GRPO_KERNEL void __launch_bounds__(256) adamw_f32(float* param, const float* grad, float* m, float* v, int n, float beta1, float beta2,
			   float eps, float decay, float stepSize, float bc2Sqrt) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
	     i += (long long)gridDim.x * blockDim.x) {
		float g = grad[i];
		float p = param[i] * decay;  // decay = 1 − lr·wd, applied before the Adam update
		float mi = beta1 * m[i] + (1.0f - beta1) * g;
		float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
		p -= stepSize * mi / (sqrtf(vi) / bc2Sqrt + eps);
		param[i] = p;
		m[i] = mi;
		v[i] = vi;
	}
}
