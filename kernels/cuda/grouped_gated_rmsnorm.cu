// grouped_gated_rmsnorm.cu: the gated norm that ends a Mamba-2 layer and
// its backward (kernels.SSMOps.GroupedGatedRMSNorm): the gate first, u =
// x·silu(z), then an RMSNorm over each group of gs columns. A row's
// groups are consecutive, so group b of the rows × dim operand is the
// columns [b·gs, (b+1)·gs) and reads w from (b mod groups)·gs. grid
// (rows·groups), block (256: a multiple of 32). Each thread reads and
// writes the same columns after the group's reduction, so out may alias
// x. The _as kernels take x, z, out (forward) and dy, x, z, dx, dz
// (backward) each f32 or bf16, by a flag word (bit i: operand i in that
// order, as ssm_ops.go's bf16Mask numbers them): read widened, stored
// rounded once; the f32 kernels pass 0, which the compiler folds. CPU
// twin: kernels/cpu/ssm_norm.go.
// nvcc -ptx -arch=compute_90 grouped_gated_rmsnorm.cu
#include "linear.cuh"

template <class W>
__device__ __forceinline__ void grouped_gated_rmsnorm(void* out, float* rstd, const void* x, const void* z, const W* w, int gs, int groups,
						      float eps, int act) {
	int ob = act & 1, xb = act & 2, zb = act & 4;
	GRPO_SHARED(float, scratch, [32]);
	long long at = (long long)blockIdx.x * gs, wk = (long long)(blockIdx.x % groups) * gs;
	float ss = 0.0f;
	for (int i = threadIdx.x; i < gs; i += blockDim.x) {
		float u = ld_as(x, xb, at + i) * siluf_(ld_as(z, zb, at + i));
		ss += u * u;
	}
	ss = block_sum(ss, scratch);
	float rs = rsqrtf(ss / gs + eps);
	if (rstd && threadIdx.x == 0) rstd[blockIdx.x] = rs;
	for (int i = threadIdx.x; i < gs; i += blockDim.x)
		st_as(out, ob, at + i, ld(w, wk + i) * ((ld_as(x, xb, at + i) * siluf_(ld_as(z, zb, at + i))) * rs));
}

GRPO_KERNEL void __launch_bounds__(256) grouped_gated_rmsnorm_f32(float* out, float* rstd, const float* x, const float* z, const float* w, int gs,
								  int groups, float eps) {
	grouped_gated_rmsnorm(out, rstd, x, z, w, gs, groups, eps, 0);
}
GRPO_KERNEL void __launch_bounds__(256) grouped_gated_rmsnorm_wbf16(float* out, float* rstd, const float* x, const float* z,
								    const __nv_bfloat16* w, int gs, int groups, float eps) {
	grouped_gated_rmsnorm(out, rstd, x, z, w, gs, groups, eps, 0);
}
GRPO_KERNEL void __launch_bounds__(256) grouped_gated_rmsnorm_as(void* out, float* rstd, const void* x, const void* z, const float* w, int gs,
								 int groups, float eps, int act) {
	grouped_gated_rmsnorm(out, rstd, x, z, w, gs, groups, eps, act);
}
GRPO_KERNEL void __launch_bounds__(256) grouped_gated_rmsnorm_wbf16_as(void* out, float* rstd, const void* x, const void* z,
								       const __nv_bfloat16* w, int gs, int groups, float eps, int act) {
	grouped_gated_rmsnorm(out, rstd, x, z, w, gs, groups, eps, act);
}

// silu_f64 is silu unrounded: the backward's two terms cancel when u·r ≈
// 1 (a group of one column), where a float silu leaves nothing exact.
__device__ __forceinline__ double silu_f64(float z) { return (double)z / (1.0 + exp(-(double)z)); }

// With u = x·silu(z) and dn = dy·w: du = r·dn − u·r³·(1/gs)·Σ dn·u,
// dx = du·silu(z), dz = du·x·silu'(z); the sum and du in float64.
template <class W>
__device__ __forceinline__ void grouped_gated_rmsnorm_backward(void* dx, void* dz, const void* dy, const void* x, const void* z, const W* w,
							       const float* rstd, int gs, int groups, int act) {
	int dxb = act & 1, dzb = act & 2, dyb = act & 4, xb = act & 8, zb = act & 16;
	GRPO_SHARED(double, scratch, [32]);
	long long at = (long long)blockIdx.x * gs, wk = (long long)(blockIdx.x % groups) * gs;
	double rs = rstd[blockIdx.x], dot = 0.0;
	for (int i = threadIdx.x; i < gs; i += blockDim.x)
		dot += (double)(ld_as(dy, dyb, at + i) * ld(w, wk + i)) * ld_as(x, xb, at + i) * silu_f64(ld_as(z, zb, at + i));
	dot = block_sum_f64(dot, scratch);
	double c = rs * rs * rs * dot / gs;
	for (int i = threadIdx.x; i < gs; i += blockDim.x) {
		float zi = ld_as(z, zb, at + i), xi = ld_as(x, xb, at + i);
		double s = silu_f64(zi), du = rs * (double)(ld_as(dy, dyb, at + i) * ld(w, wk + i)) - xi * s * c;
		st_as(dx, dxb, at + i, (float)(du * s));
		st_as(dz, dzb, at + i, (float)(du * xi * silu_gradf_(zi)));
	}
}

GRPO_KERNEL void __launch_bounds__(256) grouped_gated_rmsnorm_backward_f32(float* dx, float* dz, const float* dy, const float* x, const float* z,
									   const float* w, const float* rstd, int gs, int groups) {
	grouped_gated_rmsnorm_backward(dx, dz, dy, x, z, w, rstd, gs, groups, 0);
}
GRPO_KERNEL void __launch_bounds__(256) grouped_gated_rmsnorm_backward_wbf16(float* dx, float* dz, const float* dy, const float* x,
									     const float* z, const __nv_bfloat16* w, const float* rstd, int gs,
									     int groups) {
	grouped_gated_rmsnorm_backward(dx, dz, dy, x, z, w, rstd, gs, groups, 0);
}
GRPO_KERNEL void __launch_bounds__(256) grouped_gated_rmsnorm_backward_as(void* dx, void* dz, const void* dy, const void* x, const void* z,
									  const float* w, const float* rstd, int gs, int groups, int act) {
	grouped_gated_rmsnorm_backward(dx, dz, dy, x, z, w, rstd, gs, groups, act);
}
GRPO_KERNEL void __launch_bounds__(256) grouped_gated_rmsnorm_backward_wbf16_as(void* dx, void* dz, const void* dy, const void* x, const void* z,
										const __nv_bfloat16* w, const float* rstd, int gs, int groups,
										int act) {
	grouped_gated_rmsnorm_backward(dx, dz, dy, x, z, w, rstd, gs, groups, act);
}
