// elementwise.cu: Add, AddBias, SwiGLU, SigmoidGate. One thread per element with a
// grid-stride loop, so any grid size covers any n.
// nvcc -ptx -arch=compute_90 elementwise.cu
#include "common.cuh"

// GRPO_PLANT_OOB (kernels/emu/k_planted_oob.cc only) makes add_f32 read
// and write one element past the end of its operands: the bug AddressSanitizer must name.
#ifdef GRPO_PLANT_OOB
#define GRPO_ADD_END(n) ((n) + 1)
#else
#define GRPO_ADD_END(n) (n)
#endif
GRPO_KERNEL void __launch_bounds__(256) add_f32(float* out, const float* a, const float* b, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < GRPO_ADD_END(n);
	     i += (long long)gridDim.x * blockDim.x)
		out[i] = a[i] + b[i];
}

template <class B>
__device__ __forceinline__ void add_bias(float* x, const B* bias, int rows, int cols) {
	long long total = (long long)rows * cols;
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
	     i += (long long)gridDim.x * blockDim.x)
		x[i] += ld(bias, i % cols);
}
GRPO_KERNEL void __launch_bounds__(256) add_bias_f32(float* x, const float* bias, int rows, int cols) { add_bias(x, bias, rows, cols); }
GRPO_KERNEL void __launch_bounds__(256) add_bias_bf16(float* x, const __nv_bfloat16* bias, int rows, int cols) {
	add_bias(x, bias, rows, cols);
}

// silu(g) = g / (1 + e^-g): for g → -∞ the denominator overflows to +Inf
// and the result is -0, never NaN (e^g / (1 + e^g) would give Inf/Inf).
GRPO_KERNEL void __launch_bounds__(256) swiglu_f32(float* out, const float* gate, const float* up, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		float g = gate[i];
		out[i] = g / (1.0f + expf(-g)) * up[i];
	}
}

// out = x·σ(gate), σ formed from e = e^−|g| ≤ 1 so it never overflows
// (g = ±1000 gives exactly 0 or 1). Each thread reads x and gate before
// writing out at the same index, so out may alias either.
GRPO_KERNEL void __launch_bounds__(256) sigmoid_gate_f32(float* out, const float* x, const float* gate, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		float g = gate[i];
		float e = expf(-fabsf(g));
		float r = 1.0f / (1.0f + e);
		out[i] = x[i] * (g >= 0.0f ? r : e * r);
	}
}
// sigmoid_gate_as is sigmoid_gate_f32 with each operand f32 or bf16 (bit
// 0 of bf16: out, 1: x, 2: gate), read widened and stored rounded once.
GRPO_KERNEL void __launch_bounds__(256) sigmoid_gate_as(void* out, const void* x, const void* gate, int n, int bf16) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		float g = ld_as(gate, bf16 & 4, i);
		float e = expf(-fabsf(g));
		float r = 1.0f / (1.0f + e);
		st_as(out, bf16 & 1, i, ld_as(x, bf16 & 2, i) * (g >= 0.0f ? r : e * r));
	}
}
