// gated_rmsnorm.cu: the gated RMSNorm that ends a DeltaNet layer and its
// backward (kernels.LinearOps.GatedRMSNorm). grid (rows), block (256: a
// multiple of 32). Each thread reads and writes the same columns after
// the row's reduction, so out may alias x. The _as kernels take out, x
// and z (forward: act bits 0, 1, 2), dx, dz, dy, x and z (backward: bits
// 0..4) each f32 or bf16, read widened and stored rounded once. CPU twin:
// kernels/cpu/linear_gates.go.
// nvcc -ptx -arch=compute_90 gated_rmsnorm.cu
#include "linear.cuh"

template <bool AS, class W>
__device__ __forceinline__ void gated_rmsnorm(void* out, float* rstd, const void* x, const void* z, const W* w, int dim, float eps, int act) {
	GRPO_SHARED(float, scratch, [32]);
	long long row = (long long)blockIdx.x * dim;
	float ss = 0.0f;
	for (int i = threadIdx.x; i < dim; i += blockDim.x) {
		float xi = act_ld<AS>(x, act & 2, row + i);
		ss += xi * xi;
	}
	ss = block_sum(ss, scratch);
	float rs = rsqrtf(ss / dim + eps);
	if (rstd && threadIdx.x == 0) rstd[blockIdx.x] = rs;
	for (int i = threadIdx.x; i < dim; i += blockDim.x)
		act_st<AS>(out, act & 1, row + i, ld(w, i) * (act_ld<AS>(x, act & 2, row + i) * rs) * siluf_(act_ld<AS>(z, act & 4, row + i)));
}

GRPO_KERNEL void __launch_bounds__(256) gated_rmsnorm_f32(float* out, float* rstd, const float* x, const float* z, const float* w, int dim,
							  float eps) {
	gated_rmsnorm<false>(out, rstd, x, z, w, dim, eps, 0);
}
GRPO_KERNEL void __launch_bounds__(256) gated_rmsnorm_wbf16(float* out, float* rstd, const float* x, const float* z, const __nv_bfloat16* w,
							    int dim, float eps) {
	gated_rmsnorm<false>(out, rstd, x, z, w, dim, eps, 0);
}
GRPO_KERNEL void __launch_bounds__(256) gated_rmsnorm_as(void* out, float* rstd, const void* x, const void* z, const float* w, int dim, float eps,
							 int act) {
	gated_rmsnorm<true>(out, rstd, x, z, w, dim, eps, act);
}
GRPO_KERNEL void __launch_bounds__(256) gated_rmsnorm_wbf16_as(void* out, float* rstd, const void* x, const void* z, const __nv_bfloat16* w, int dim,
							       float eps, int act) {
	gated_rmsnorm<true>(out, rstd, x, z, w, dim, eps, act);
}

// With n = x·r and dn = dy·w·silu(z): dx = r·dn − x·r³·(1/dim)·Σ dn·x,
// dz = dy·w·n·silu'(z). The sum and dx's difference are float64, as in
// rmsnorm_backward.cu: the two terms cancel when x·r ≈ 1 in every column.
template <bool AS, class W>
__device__ __forceinline__ void gated_rmsnorm_backward(void* dx, void* dz, const void* dy, const void* x, const void* z, const W* w,
						       const float* rstd, int dim, int act) {
	GRPO_SHARED(double, scratch, [32]);
	long long row = (long long)blockIdx.x * dim;
	double rs = rstd[blockIdx.x], dot = 0.0;
	for (int i = threadIdx.x; i < dim; i += blockDim.x)
		dot += (double)(act_ld<AS>(dy, act & 4, row + i) * ld(w, i) * siluf_(act_ld<AS>(z, act & 16, row + i))) *
		       act_ld<AS>(x, act & 8, row + i);
	dot = block_sum_f64(dot, scratch);
	double c = rs * rs * rs * dot / dim;
	for (int i = threadIdx.x; i < dim; i += blockDim.x) {
		float g = act_ld<AS>(dy, act & 4, row + i) * ld(w, i), zi = act_ld<AS>(z, act & 16, row + i), xi = act_ld<AS>(x, act & 8, row + i);
		act_st<AS>(dz, act & 2, row + i, g * xi * (float)rs * silu_gradf_(zi));
		act_st<AS>(dx, act & 1, row + i, (float)(rs * (g * siluf_(zi)) - xi * c));
	}
}

GRPO_KERNEL void __launch_bounds__(256) gated_rmsnorm_backward_f32(float* dx, float* dz, const float* dy, const float* x, const float* z,
								   const float* w, const float* rstd, int dim) {
	gated_rmsnorm_backward<false>(dx, dz, dy, x, z, w, rstd, dim, 0);
}
GRPO_KERNEL void __launch_bounds__(256) gated_rmsnorm_backward_wbf16(float* dx, float* dz, const float* dy, const float* x, const float* z,
								     const __nv_bfloat16* w, const float* rstd, int dim) {
	gated_rmsnorm_backward<false>(dx, dz, dy, x, z, w, rstd, dim, 0);
}
GRPO_KERNEL void __launch_bounds__(256) gated_rmsnorm_backward_as(void* dx, void* dz, const void* dy, const void* x, const void* z, const float* w,
								  const float* rstd, int dim, int act) {
	gated_rmsnorm_backward<true>(dx, dz, dy, x, z, w, rstd, dim, act);
}
GRPO_KERNEL void __launch_bounds__(256) gated_rmsnorm_backward_wbf16_as(void* dx, void* dz, const void* dy, const void* x, const void* z,
									const __nv_bfloat16* w, const float* rstd, int dim, int act) {
	gated_rmsnorm_backward<true>(dx, dz, dy, x, z, w, rstd, dim, act);
}
