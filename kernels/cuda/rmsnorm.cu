// rmsnorm.cu: RMSNorm forward. grid (rows), block (256: a multiple of 32).
// Each thread reads and writes the same columns in both passes, so out may
// alias x.
// nvcc -ptx -arch=compute_90 rmsnorm.cu
#include "common.cuh"

template <class W>
__device__ __forceinline__ void rmsnorm(float* out, float* rstd, const float* x, const W* w, int dim, float eps) {
	GRPO_SHARED(float, scratch, [32]);
	long long r = blockIdx.x;
	const float* xr = x + r * dim;
	float ss = 0.0f;
	for (int i = threadIdx.x; i < dim; i += blockDim.x) ss += xr[i] * xr[i];
	ss = block_sum(ss, scratch);
	float rs = rsqrtf(ss / dim + eps);
	if (rstd && threadIdx.x == 0) rstd[r] = rs;
	for (int i = threadIdx.x; i < dim; i += blockDim.x) out[r * dim + i] = xr[i] * rs * ld(w, i);
}

GRPO_KERNEL void __launch_bounds__(256) rmsnorm_f32(float* out, float* rstd, const float* x, const float* w, int rows, int dim, float eps) {
	rmsnorm(out, rstd, x, w, dim, eps);
}
GRPO_KERNEL void __launch_bounds__(256) rmsnorm_wbf16(float* out, float* rstd, const float* x, const __nv_bfloat16* w, int rows, int dim,
			       float eps) {
	rmsnorm(out, rstd, x, w, dim, eps);
}
