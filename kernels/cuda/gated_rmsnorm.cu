// gated_rmsnorm.cu: the gated RMSNorm that ends a DeltaNet layer and its
// backward (kernels.LinearOps.GatedRMSNorm). grid (rows), block (256: a
// multiple of 32). Each thread reads and writes the same columns after
// the row's reduction, so out may alias x. CPU twin:
// kernels/cpu/linear_gates.go.
// nvcc -ptx -arch=compute_90 gated_rmsnorm.cu
#include "linear.cuh"

template <class W>
__device__ __forceinline__ void gated_rmsnorm(float* out, float* rstd, const float* x, const float* z, const W* w, int dim, float eps) {
	GRPO_SHARED(float, scratch, [32]);
	long long row = (long long)blockIdx.x * dim;
	float ss = 0.0f;
	for (int i = threadIdx.x; i < dim; i += blockDim.x) ss += x[row + i] * x[row + i];
	ss = block_sum(ss, scratch);
	float rs = rsqrtf(ss / dim + eps);
	if (rstd && threadIdx.x == 0) rstd[blockIdx.x] = rs;
	for (int i = threadIdx.x; i < dim; i += blockDim.x) out[row + i] = ld(w, i) * (x[row + i] * rs) * siluf_(z[row + i]);
}

GRPO_KERNEL void __launch_bounds__(256) gated_rmsnorm_f32(float* out, float* rstd, const float* x, const float* z, const float* w, int dim,
							  float eps) {
	gated_rmsnorm(out, rstd, x, z, w, dim, eps);
}
GRPO_KERNEL void __launch_bounds__(256) gated_rmsnorm_wbf16(float* out, float* rstd, const float* x, const float* z, const __nv_bfloat16* w,
							    int dim, float eps) {
	gated_rmsnorm(out, rstd, x, z, w, dim, eps);
}

// With n = x·r and dn = dy·w·silu(z): dx = r·dn − x·r³·(1/dim)·Σ dn·x,
// dz = dy·w·n·silu'(z). The sum and dx's difference are float64, as in
// rmsnorm_backward.cu: the two terms cancel when x·r ≈ 1 in every column.
template <class W>
__device__ __forceinline__ void gated_rmsnorm_backward(float* dx, float* dz, const float* dy, const float* x, const float* z, const W* w,
						       const float* rstd, int dim) {
	GRPO_SHARED(double, scratch, [32]);
	long long row = (long long)blockIdx.x * dim;
	double rs = rstd[blockIdx.x], dot = 0.0;
	for (int i = threadIdx.x; i < dim; i += blockDim.x) dot += (double)(dy[row + i] * ld(w, i) * siluf_(z[row + i])) * x[row + i];
	dot = block_sum_f64(dot, scratch);
	double c = rs * rs * rs * dot / dim;
	for (int i = threadIdx.x; i < dim; i += blockDim.x) {
		float g = dy[row + i] * ld(w, i), zi = z[row + i], xi = x[row + i];
		dz[row + i] = g * xi * (float)rs * silu_gradf_(zi);
		dx[row + i] = (float)(rs * (g * siluf_(zi)) - xi * c);
	}
}

GRPO_KERNEL void __launch_bounds__(256) gated_rmsnorm_backward_f32(float* dx, float* dz, const float* dy, const float* x, const float* z,
								   const float* w, const float* rstd, int dim) {
	gated_rmsnorm_backward(dx, dz, dy, x, z, w, rstd, dim);
}
GRPO_KERNEL void __launch_bounds__(256) gated_rmsnorm_backward_wbf16(float* dx, float* dz, const float* dy, const float* x, const float* z,
								     const __nv_bfloat16* w, const float* rstd, int dim) {
	gated_rmsnorm_backward(dx, dz, dy, x, z, w, rstd, dim);
}
