// rmsnorm_backward.cu: RMSNormBackward, the input gradient of RMSNorm with
// frozen weights: with r = rstd from the forward and g = w·dy,
// dx = r·g − x·r³·(1/dim)·Σ g·x. One block per row, a multiple of 32
// threads striding over the row (Go sizes the block to the row: 256 for
// hidden-size rows, head_dim for the per-head q/k norms, where rows =
// tokens·heads). Each thread reads dy, x at the same columns in both
// passes and the block_sum barriers separate the passes, so dx may alias
// dy when not accumulating.
//
// The sum and the final difference are float64: the two terms of dx
// cancel when x·r ≈ 1 in every column (dim = 1, or rows whose mean square
// is far above eps with a gradient along x), and in float32 the
// cancellation left 3e-4 relative error (the dim = 1 case of the suite);
// float64 costs nothing here, the kernel is bound by memory bandwidth.
//
// dy may be bf16 (the backward GEMM's bf16 output), read widened. dx_bf16,
// when not null, receives the final dx (after the accumulate) rounded to
// bf16 in the same pass: the A operand of the next backward GEMM.
// nvcc -ptx -arch=compute_90 rmsnorm_backward.cu
#include "common.cuh"

template <class W, class Y>
__device__ __forceinline__ void rmsnorm_backward(float* dx, __nv_bfloat16* dx_bf16, const Y* dy, const float* x, const W* w,
						 const float* rstd, int dim, int accumulate) {
	GRPO_SHARED(double, scratch, [32]);
	long long row = (long long)blockIdx.x * dim;
	const float* xr = x + row;
	const Y* dyr = dy + row;
	double dot = 0.0;
	for (int i = threadIdx.x; i < dim; i += blockDim.x) dot += (double)ld(w, i) * ld(dyr, i) * xr[i];
	dot = block_sum_f64(dot, scratch);
	double r = rstd[blockIdx.x];
	double c = r * r * r * (dot / dim);
	for (int i = threadIdx.x; i < dim; i += blockDim.x) {
		double g = r * ld(w, i) * ld(dyr, i) - xr[i] * c;
		if (accumulate) g += dx[row + i];
		float v = (float)g;
		dx[row + i] = v;
		if (dx_bf16) dx_bf16[row + i] = __float2bfloat16_rn(v);
	}
}

// Named for the weights' dtype (f32, wbf16), with _dybf16 a bf16 dy.
#define RMSNORM_BACKWARD(name, W, Y)                                                                                     \
	GRPO_KERNEL void __launch_bounds__(256) name(float* dx, __nv_bfloat16* dx_bf16, const Y* dy, const float* x, const W* w, \
						      const float* rstd, int rows, int dim, int accumulate) {                 \
		rmsnorm_backward(dx, dx_bf16, dy, x, w, rstd, dim, accumulate);                                          \
	}
RMSNORM_BACKWARD(rmsnorm_backward_f32, float, float)
RMSNORM_BACKWARD(rmsnorm_backward_wbf16, __nv_bfloat16, float)
RMSNORM_BACKWARD(rmsnorm_backward_f32_dybf16, float, __nv_bfloat16)
RMSNORM_BACKWARD(rmsnorm_backward_wbf16_dybf16, __nv_bfloat16, __nv_bfloat16)
