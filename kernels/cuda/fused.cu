// fused.cu: the fused ops (kernels.FusedOps) and SwiGLURows' backward.
// add_rmsnorm: grid (rows), block (256: a multiple of 32), as rmsnorm.cu;
// the SwiGLU kernels: one thread per element with a grid-stride loop.
// nvcc -ptx -arch=compute_90 fused.cu
#include "common.cuh"

// The residual add and the norm: each thread adds, writes and squares the
// same columns, then normalises them, so sum may alias x or r. With r
// null there is no add (sum is null too). out_bf16, when not null, gets
// the very value written to out, rounded to nearest even.
template <class W>
__device__ __forceinline__ void add_rmsnorm(float* sum, float* out, __nv_bfloat16* out_bf16, float* rstd, const float* x,
					    const float* r, const W* w, int dim, float eps) {
	GRPO_SHARED(float, scratch, [32]);
	long long row = blockIdx.x * (long long)dim;
	const float* s = r ? sum + row : x + row;
	float ss = 0.0f;
	for (int i = threadIdx.x; i < dim; i += blockDim.x) {
		float v = x[row + i];
		if (r) {
			v += r[row + i];
			sum[row + i] = v;
		}
		ss += v * v;
	}
	ss = block_sum(ss, scratch);
	float rs = rsqrtf(ss / dim + eps);
	if (rstd && threadIdx.x == 0) rstd[blockIdx.x] = rs;
	for (int i = threadIdx.x; i < dim; i += blockDim.x) {
		float v = s[i] * rs * ld(w, i);
		out[row + i] = v;
		if (out_bf16) out_bf16[row + i] = __float2bfloat16_rn(v);
	}
}

GRPO_KERNEL void __launch_bounds__(256) add_rmsnorm_f32(float* sum, float* out, __nv_bfloat16* out_bf16, float* rstd, const float* x,
							 const float* r, const float* w, int rows, int dim, float eps) {
	add_rmsnorm(sum, out, out_bf16, rstd, x, r, w, dim, eps);
}
GRPO_KERNEL void __launch_bounds__(256) add_rmsnorm_wbf16(float* sum, float* out, __nv_bfloat16* out_bf16, float* rstd, const float* x,
							   const float* r, const __nv_bfloat16* w, int rows, int dim, float eps) {
	add_rmsnorm(sum, out, out_bf16, rstd, x, r, w, dim, eps);
}

#define GRID_STRIDE(i, n) \
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); i += (long long)gridDim.x * blockDim.x)

// out[r, j] = silu(gate) · up with gate = gate_up[r, j] and up = gate_up[r,
// width + j]; silu as swiglu_f32 (elementwise.cu).
GRPO_KERNEL void __launch_bounds__(256) swiglu_rows_f32(float* out, __nv_bfloat16* out_bf16, const float* gate_up, int rows, int width) {
	GRID_STRIDE(i, (long long)rows * width) {
		long long r = i / width, j = i % width;
		float g = gate_up[2 * r * width + j], u = gate_up[(2 * r + 1) * width + j];
		float v = g / (1.0f + expf(-g)) * u;
		out[i] = v;
		if (out_bf16) out_bf16[i] = __float2bfloat16_rn(v);
	}
}

// SwiGLURows' backward, with swiglu_backward_f32's formulas
// (train_elementwise.cu): dgate into the first half of each row of
// d_gate_up, dup into the second.
GRPO_KERNEL void __launch_bounds__(256) swiglu_rows_backward_f32(float* d_gate_up, const float* dy, const float* gate_up, int rows,
								  int width) {
	GRID_STRIDE(i, (long long)rows * width) {
		long long r = i / width, j = i % width;
		long long gi = 2 * r * width + j, ui = gi + width;
		float g = gate_up[gi], u = gate_up[ui], d = dy[i];
		float e = expf(-fabsf(g));
		float q = 1.0f / (1.0f + e);
		float sig = g >= 0.0f ? q : e * q;  // σ(g)
		float om = g >= 0.0f ? e * q : q;   // 1 − σ(g)
		d_gate_up[gi] = d * u * (sig * (1.0f + g * om));
		d_gate_up[ui] = d * (g * sig);
	}
}
