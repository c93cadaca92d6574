// elementwise.cu: Add, AddBias, SwiGLU, SigmoidGate. One thread per element with a
// grid-stride loop, so any grid size covers any n.
//
// Add and AddBias also take bf16 activations (a bf16 model's tensors
// between ops): operands are read widened, summed in f32, and a bf16
// output is stored rounded to nearest even once. Each dtype combination
// is its own kernel, named for its operands in order (add_<out>_<a>_<b>,
// add_bias_<bias>_xbf16); the all-f32 ones keep their names and code.
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

// st stores an f32 result: as it is to f32, rounded to nearest even to bf16.
__device__ __forceinline__ void st(float* p, long long i, float v) { p[i] = v; }
__device__ __forceinline__ void st(__nv_bfloat16* p, long long i, float v) { p[i] = __float2bfloat16_rn(v); }

// Each thread reads a[i] and b[i] before it writes out[i], so out may
// alias a or b (of its own dtype).
template <class O, class A, class B>
__device__ __forceinline__ void add(O* out, const A* a, const B* b, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		st(out, i, ld(a, i) + ld(b, i));
}
// The Go side swaps a and b so that a bf16 a comes with a bf16 b (f32
// addition commutes exactly): these five and add_f32 cover every case.
GRPO_KERNEL void __launch_bounds__(256) add_f32_f32_bf16(float* out, const float* a, const __nv_bfloat16* b, int n) { add(out, a, b, n); }
GRPO_KERNEL void __launch_bounds__(256) add_f32_bf16_bf16(float* out, const __nv_bfloat16* a, const __nv_bfloat16* b, int n) {
	add(out, a, b, n);
}
GRPO_KERNEL void __launch_bounds__(256) add_bf16_f32_f32(__nv_bfloat16* out, const float* a, const float* b, int n) { add(out, a, b, n); }
GRPO_KERNEL void __launch_bounds__(256) add_bf16_f32_bf16(__nv_bfloat16* out, const float* a, const __nv_bfloat16* b, int n) {
	add(out, a, b, n);
}
GRPO_KERNEL void __launch_bounds__(256) add_bf16_bf16_bf16(__nv_bfloat16* out, const __nv_bfloat16* a, const __nv_bfloat16* b, int n) {
	add(out, a, b, n);
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
// x bf16: widened, bias added in f32, rounded once.
template <class B>
__device__ __forceinline__ void add_bias_xbf16(__nv_bfloat16* x, const B* bias, int rows, int cols) {
	long long total = (long long)rows * cols;
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
	     i += (long long)gridDim.x * blockDim.x)
		st(x, i, ld(x, i) + ld(bias, i % cols));
}
GRPO_KERNEL void __launch_bounds__(256) add_bias_f32_xbf16(__nv_bfloat16* x, const float* bias, int rows, int cols) {
	add_bias_xbf16(x, bias, rows, cols);
}
GRPO_KERNEL void __launch_bounds__(256) add_bias_bf16_xbf16(__nv_bfloat16* x, const __nv_bfloat16* bias, int rows, int cols) {
	add_bias_xbf16(x, bias, rows, cols);
}

// silu(g) = g / (1 + e^-g): for g → -∞ the denominator overflows to +Inf
// and the result is -0, never NaN (e^g / (1 + e^g) would give Inf/Inf).
GRPO_KERNEL void __launch_bounds__(256) swiglu_f32(float* out, const float* gate, const float* up, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		float g = gate[i];
		out[i] = g / (1.0f + expf(-g)) * up[i];
	}
}
// swiglu_as is swiglu_f32 with each operand f32 or bf16 (bit 0 of bf16:
// out, 1: gate, 2: up), read widened and stored rounded once.
GRPO_KERNEL void __launch_bounds__(256) swiglu_as(void* out, const void* gate, const void* up, int n, int bf16) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		float g = ld_as(gate, bf16 & 2, i);
		st_as(out, bf16 & 1, i, g / (1.0f + expf(-g)) * ld_as(up, bf16 & 4, i));
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
