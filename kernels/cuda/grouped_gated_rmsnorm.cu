// grouped_gated_rmsnorm.cu: the gated norm that ends a Mamba-2 layer and
// its backward (kernels.SSMOps.GroupedGatedRMSNorm): the gate first, u =
// x·silu(z), then an RMSNorm over each group of gs columns. A row's
// groups are consecutive, so group b of the rows × dim operand is the
// columns [b·gs, (b+1)·gs) and reads w from (b mod groups)·gs. grid
// (rows·groups), block (256: a multiple of 32). Each thread reads and
// writes the same columns after the group's reduction, so out may alias
// x. CPU twin: kernels/cpu/ssm_norm.go.
// nvcc -ptx -arch=compute_90 grouped_gated_rmsnorm.cu
#include "linear.cuh"

template <class W>
__device__ __forceinline__ void grouped_gated_rmsnorm(float* out, float* rstd, const float* x, const float* z, const W* w, int gs, int groups,
						      float eps) {
	GRPO_SHARED(float, scratch, [32]);
	long long at = (long long)blockIdx.x * gs, wk = (long long)(blockIdx.x % groups) * gs;
	float ss = 0.0f;
	for (int i = threadIdx.x; i < gs; i += blockDim.x) {
		float u = x[at + i] * siluf_(z[at + i]);
		ss += u * u;
	}
	ss = block_sum(ss, scratch);
	float rs = rsqrtf(ss / gs + eps);
	if (rstd && threadIdx.x == 0) rstd[blockIdx.x] = rs;
	for (int i = threadIdx.x; i < gs; i += blockDim.x) out[at + i] = ld(w, wk + i) * ((x[at + i] * siluf_(z[at + i])) * rs);
}

GRPO_KERNEL void __launch_bounds__(256) grouped_gated_rmsnorm_f32(float* out, float* rstd, const float* x, const float* z, const float* w, int gs,
								  int groups, float eps) {
	grouped_gated_rmsnorm(out, rstd, x, z, w, gs, groups, eps);
}
GRPO_KERNEL void __launch_bounds__(256) grouped_gated_rmsnorm_wbf16(float* out, float* rstd, const float* x, const float* z,
								    const __nv_bfloat16* w, int gs, int groups, float eps) {
	grouped_gated_rmsnorm(out, rstd, x, z, w, gs, groups, eps);
}

// silu_f64 is silu unrounded: the backward's two terms cancel when u·r ≈
// 1 (a group of one column), where a float silu leaves nothing exact.
__device__ __forceinline__ double silu_f64(float z) { return (double)z / (1.0 + exp(-(double)z)); }

// With u = x·silu(z) and dn = dy·w: du = r·dn − u·r³·(1/gs)·Σ dn·u,
// dx = du·silu(z), dz = du·x·silu'(z); the sum and du in float64.
template <class W>
__device__ __forceinline__ void grouped_gated_rmsnorm_backward(float* dx, float* dz, const float* dy, const float* x, const float* z, const W* w,
							       const float* rstd, int gs, int groups) {
	GRPO_SHARED(double, scratch, [32]);
	long long at = (long long)blockIdx.x * gs, wk = (long long)(blockIdx.x % groups) * gs;
	double rs = rstd[blockIdx.x], dot = 0.0;
	for (int i = threadIdx.x; i < gs; i += blockDim.x) dot += (double)(dy[at + i] * ld(w, wk + i)) * x[at + i] * silu_f64(z[at + i]);
	dot = block_sum_f64(dot, scratch);
	double c = rs * rs * rs * dot / gs;
	for (int i = threadIdx.x; i < gs; i += blockDim.x) {
		float zi = z[at + i], xi = x[at + i];
		double s = silu_f64(zi), du = rs * (double)(dy[at + i] * ld(w, wk + i)) - xi * s * c;
		dx[at + i] = (float)(du * s);
		dz[at + i] = (float)(du * xi * silu_gradf_(zi));
	}
}

GRPO_KERNEL void __launch_bounds__(256) grouped_gated_rmsnorm_backward_f32(float* dx, float* dz, const float* dy, const float* x, const float* z,
									   const float* w, const float* rstd, int gs, int groups) {
	grouped_gated_rmsnorm_backward(dx, dz, dy, x, z, w, rstd, gs, groups);
}
GRPO_KERNEL void __launch_bounds__(256) grouped_gated_rmsnorm_backward_wbf16(float* dx, float* dz, const float* dy, const float* x,
									     const float* z, const __nv_bfloat16* w, const float* rstd, int gs,
									     int groups) {
	grouped_gated_rmsnorm_backward(dx, dz, dy, x, z, w, rstd, gs, groups);
}
