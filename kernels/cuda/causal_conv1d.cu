// causal_conv1d.cu: the depthwise causal convolution with SiLU of a
// DeltaNet or Mamba-2 layer (the bias, null for none, is Mamba-2's) and
// its backward (kernels.LinearOps.CausalConv1D), one
// thread per channel of a run: a channel's taps, state rows and tokens
// are its own, so the thread walks the run with the last kernel−1 inputs
// in registers. The _as kernels take out and x (forward), dx, dout and x
// (backward) each f32 or bf16 by the act mask (bit 0, 1, 2 in that
// order), read widened and stored rounded once; the others are f32 only.
// Its CPU twin is kernels/cpu/linear_conv.go.
// nvcc -ptx -arch=compute_90 causal_conv1d.cu
#include "linear.cuh"

// CONV_MAX_KERNEL bounds kernel (Go checks it): the window lives in
// registers. Qwen3.5's is 4.
#define CONV_MAX_KERNEL 8

// grid (⌈channels/256⌉, nRuns), block (256).
template <bool AS, class W>
__device__ __forceinline__ void causal_conv1d(void* out, const void* x, const W* w, const W* bias, float* convState, const int* runs, int nTok, int slots,
					      int channels, int kernel, int act) {
	int c = blockIdx.x * blockDim.x + threadIdx.x;
	LinearRun r;
	if (c >= channels || !linear_run(runs, blockIdx.y, nTok, slots, &r)) return;
	long long per = (long long)(kernel - 1) * channels;
	float wc[CONV_MAX_KERNEL], win[CONV_MAX_KERNEL];
	for (int j = 0; j < kernel; j++) wc[j] = ld(w, (long long)c * kernel + j);
	float b = bias ? ld(bias, c) : 0.0f;
	// win[0..kernel−2]: the inputs before the current token, oldest first.
	for (int m = 0; m < kernel - 1; m++) win[m] = r.init >= 0 ? convState[r.init * per + (long long)m * channels + c] : 0.0f;
	for (int i = 0; i < r.count; i++) {
		long long at = (long long)(r.first + i) * channels + c;
		// The bias first, as the CPU twin sums: without one, p is the sum it was.
		float xi = act_ld<AS>(x, act & 2, at), p = b;
		for (int j = 0; j < kernel - 1; j++) p += wc[j] * win[j];
		p += wc[kernel - 1] * xi;
		act_st<AS>(out, act & 1, at, siluf_(p));
		for (int j = 0; j + 1 < kernel - 1; j++) win[j] = win[j + 1];
		win[kernel - 2] = xi;
	}
	// After the run read its init state: the final slot may be the same.
	if (r.fin >= 0)
		for (int m = 0; m < kernel - 1; m++) convState[r.fin * per + (long long)m * channels + c] = win[m];
}

GRPO_KERNEL void __launch_bounds__(256) causal_conv1d_f32(float* out, const float* x, const float* w, const float* bias, float* convState, const int* runs, int nTok,
							  int slots, int channels, int kernel) {
	causal_conv1d<false>(out, x, w, bias, convState, runs, nTok, slots, channels, kernel, 0);
}
GRPO_KERNEL void __launch_bounds__(256) causal_conv1d_wbf16(float* out, const float* x, const __nv_bfloat16* w, const __nv_bfloat16* bias, float* convState, const int* runs,
							    int nTok, int slots, int channels, int kernel) {
	causal_conv1d<false>(out, x, w, bias, convState, runs, nTok, slots, channels, kernel, 0);
}
GRPO_KERNEL void __launch_bounds__(256) causal_conv1d_as(void* out, const void* x, const float* w, const float* bias, float* convState, const int* runs, int nTok,
							 int slots, int channels, int kernel, int act) {
	causal_conv1d<true>(out, x, w, bias, convState, runs, nTok, slots, channels, kernel, act);
}
GRPO_KERNEL void __launch_bounds__(256) causal_conv1d_wbf16_as(void* out, const void* x, const __nv_bfloat16* w, const __nv_bfloat16* bias, float* convState,
							       const int* runs, int nTok, int slots, int channels, int kernel, int act) {
	causal_conv1d<true>(out, x, w, bias, convState, runs, nTok, slots, channels, kernel, act);
}

// conv_input is u[i] of a run (i ≥ −(kernel−1)): token i, or row
// kernel−1+i of the init state (zero without one).
template <bool AS>
__device__ __forceinline__ float conv_input(const void* x, int xbf, const float* convState, LinearRun r, long long per, int channels, int kernel,
					    int c, int i) {
	if (i >= 0) return act_ld<AS>(x, xbf, (long long)(r.first + i) * channels + c);
	return r.init >= 0 ? convState[r.init * per + (long long)(kernel - 1 + i) * channels + c] : 0.0f;
}

// grid (⌈channels/256⌉, nRuns), block (256). Walks the run backwards from
// its last input: du[i] = Σ_j w_j·dp[i + kernel−1−j] (+ the final state's
// gradient for its rows), to dx for tokens and, added atomically (runs
// may share an init slot), to dConvState[init] for the state's rows.
template <bool AS, class W>
__device__ __forceinline__ void causal_conv1d_backward(void* dx, float* dConvState, const void* dout, const void* x, const W* w, const W* bias,
						       const float* convState, const int* runs, int nTok, int slots, int channels, int kernel, int act) {
	int c = blockIdx.x * blockDim.x + threadIdx.x;
	LinearRun r;
	if (c >= channels || !linear_run(runs, blockIdx.y, nTok, slots, &r)) return;
	long long per = (long long)(kernel - 1) * channels;
	float wc[CONV_MAX_KERNEL], dp[CONV_MAX_KERNEL];
	for (int j = 0; j < kernel; j++) {
		wc[j] = ld(w, (long long)c * kernel + j);
		dp[j] = 0.0f;
	}
	float b = bias ? ld(bias, c) : 0.0f;
	for (int i = r.count - 1; i >= -(kernel - 1); i--) {
		// dp[j] = the pre-activation gradient of token i + j.
		for (int j = kernel - 1; j > 0; j--) dp[j] = dp[j - 1];
		dp[0] = 0.0f;
		if (i >= 0) {
			float p = b;
			for (int j = 0; j < kernel; j++) p += wc[j] * conv_input<AS>(x, act & 4, convState, r, per, channels, kernel, c, i - kernel + 1 + j);
			dp[0] = act_ld<AS>(dout, act & 2, (long long)(r.first + i) * channels + c) * silu_gradf_(p);
		}
		float du = 0.0f;
		for (int j = 0; j < kernel; j++) du += wc[kernel - 1 - j] * dp[j];
		int m = i - (r.count - (kernel - 1)); // row of the final state u[i] became
		if (r.fin >= 0 && m >= 0) du += dConvState[r.fin * per + (long long)m * channels + c];
		if (i >= 0)
			act_st<AS>(dx, act & 1, (long long)(r.first + i) * channels + c, du);
		else if (r.init >= 0)
			atomicAdd(&dConvState[r.init * per + (long long)(kernel - 1 + i) * channels + c], du);
	}
}

GRPO_KERNEL void __launch_bounds__(256) causal_conv1d_backward_f32(float* dx, float* dConvState, const float* dout, const float* x, const float* w,
								   const float* bias, const float* convState, const int* runs, int nTok, int slots, int channels,
								   int kernel) {
	causal_conv1d_backward<false>(dx, dConvState, dout, x, w, bias, convState, runs, nTok, slots, channels, kernel, 0);
}
GRPO_KERNEL void __launch_bounds__(256) causal_conv1d_backward_wbf16(float* dx, float* dConvState, const float* dout, const float* x,
								     const __nv_bfloat16* w, const __nv_bfloat16* bias, const float* convState, const int* runs, int nTok,
								     int slots, int channels, int kernel) {
	causal_conv1d_backward<false>(dx, dConvState, dout, x, w, bias, convState, runs, nTok, slots, channels, kernel, 0);
}
GRPO_KERNEL void __launch_bounds__(256) causal_conv1d_backward_as(void* dx, float* dConvState, const void* dout, const void* x, const float* w,
								  const float* bias, const float* convState, const int* runs, int nTok, int slots, int channels,
								  int kernel, int act) {
	causal_conv1d_backward<true>(dx, dConvState, dout, x, w, bias, convState, runs, nTok, slots, channels, kernel, act);
}
GRPO_KERNEL void __launch_bounds__(256) causal_conv1d_backward_wbf16_as(void* dx, float* dConvState, const void* dout, const void* x,
									const __nv_bfloat16* w, const __nv_bfloat16* bias, const float* convState,
									const int* runs, int nTok, int slots, int channels, int kernel, int act) {
	causal_conv1d_backward<true>(dx, dConvState, dout, x, w, bias, convState, runs, nTok, slots, channels, kernel, act);
}
