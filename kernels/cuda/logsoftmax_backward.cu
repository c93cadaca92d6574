// logsoftmax_backward.cu: LogSoftmaxGatherBackward, per row
// dlogits = dlogp·(onehot(target) − softmax(logits)). One block per row,
// each thread striding over the vocabulary (coalesced, vocab-chunked: the
// softmax is never stored, only recomputed per element on the way out).
//
// Pass 1 is an online softmax: each thread keeps a running max m and
// Σ e^(x−m) over its columns, rescaling the sum when the max grows; the
// block then combines them (global max M, each sum times e^(m−M)). Pass 2
// writes the gradient. So the row is read twice and written once, not read
// three times. A row with dlogp = 0 (a masked token) is written as zeros
// without reading the logits.
// nvcc -ptx -arch=compute_90 logsoftmax_backward.cu
#include "common.cuh"

//
// The _bf16 variant writes dlogits in bf16, each f32 gradient rounded to
// nearest even: the A operand of the LM head's backward GEMM when its
// weights are bf16, which would otherwise round an f32 dlogits in a pass
// of its own.

// store_grad writes one gradient: f32 as it is, bf16 rounded.
__device__ __forceinline__ void store_grad(float* p, float v) { *p = v; }
__device__ __forceinline__ void store_grad(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

template <class D>
__device__ __forceinline__ void log_softmax_gather_backward(D* dlogits, const float* dlogp, const float* logits,
							     const int* target, int vocab, float* scratch) {
	long long r = blockIdx.x;
	const float* x = logits + r * vocab;
	D* dx = dlogits + r * vocab;
	float g = dlogp[r];
	if (g == 0.0f) {  // uniform across the block: no thread skips a barrier
		for (int i = threadIdx.x; i < vocab; i += blockDim.x) store_grad(dx + i, 0.0f);
		return;
	}
	float m = -INFINITY, s = 0.0f;
	for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
		float v = x[i];
		if (v > m) {
			s *= expf(m - v);  // 0 on the first column (m = -Inf)
			m = v;
		}
		s += expf(v - m);
	}
	float M = block_max(m, scratch);
	float z = block_sum(m == -INFINITY ? 0.0f : s * expf(m - M), scratch);
	float gz = g / z;
	int t = target[r];
	for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
		float d = -gz * expf(x[i] - M);
		if (i == t) d += g;
		store_grad(dx + i, d);
	}
}

GRPO_KERNEL void __launch_bounds__(1024) log_softmax_gather_backward_f32(float* dlogits, const float* dlogp, const float* logits,
						 const int* target, int rows, int vocab) {
	GRPO_SHARED(float, scratch, [32]);
	log_softmax_gather_backward(dlogits, dlogp, logits, target, vocab, scratch);
}

GRPO_KERNEL void __launch_bounds__(1024) log_softmax_gather_backward_bf16(__nv_bfloat16* dlogits, const float* dlogp, const float* logits,
						  const int* target, int rows, int vocab) {
	GRPO_SHARED(float, scratch, [32]);
	log_softmax_gather_backward(dlogits, dlogp, logits, target, vocab, scratch);
}
