// gated_delta_chunked.cu: the gated delta rule over runs in chunks of 64
// tokens (kernels.LinearOps.GatedDeltaRule for prefill and training), the
// chunked form kernels/kerneltest/linear_chunked.go derives and checks
// against the recurrence. One block per (run, value head) walks the run's
// chunks in order with the head's state in shared memory; within a chunk
// every step is a small matrix product spread over the block:
//
//	A[t,s] = β_t·exp(G_t − G_s)·k̂_t·k̂_s         (s < t)
//	U = (I + A)⁻¹·(β⊙V),  W = (I + A)⁻¹·(β⊙exp(G)⊙K̂)   forward substitution
//	Δ = U − W·S
//	out_t = exp(G_t)·q̂_tᵀS + Σ_{s≤t} exp(G_t − G_s)(q̂_t·k̂_s)·Δ_s
//	S ← exp(G_L)·S + Σ_s exp(G_L − G_s)·k̂_s Δ_sᵀ
//
// where G is the running sum of g within the chunk. Only differences
// G_t − G_s (t ≥ s) and G itself are exponentiated, so nothing overflows.
// gated_delta_chunked_as takes out and qkv each f32 or bf16 (act bits 0
// and 1), read widened and stored rounded once.
// nvcc -ptx -arch=compute_90 gated_delta_chunked.cu
#include "delta_chunk.cuh"

// grid (nRuns, nHeadV), block (256), dynamic shared (linear_ops.go's
// chunkedShared): S (dimK × dimV), K̂ and W/Q̂ (64 × dimK each), U/Δ
// (64 × dimV), A (64 × 64), G and β (64 each).
template <bool AS>
__device__ __forceinline__ void gated_delta_chunked(void* out, const void* qkv, const float* g, const float* beta, float* state, const int* runs,
						    int nTok, int slots, int nHeadK, int nHeadV, int dimK, int dimV, int act) {
	GRPO_DYNAMIC_SHARED(float, sh);
	const int C = DELTA_CHUNK;
	DeltaDims d = {nHeadK, nHeadV, dimK, dimV};
	int h = blockIdx.y, tid = threadIdx.x, nt = blockDim.x;
	LinearRun r;
	if (!linear_run(runs, blockIdx.x, nTok, slots, &r)) return;
	float* S = sh;
	float* K = S + dimK * dimV;
	float* QW = K + C * dimK; // W, then q̂
	float* U = QW + C * dimK;
	float* A = U + C * dimV;
	float* G = A + C * C;
	float* B = G + C;
	long long width = d.width(), hs = d.headState();
	const float* S0 = r.init >= 0 ? state + ((long long)r.init * nHeadV + h) * hs : nullptr;
	for (int e = tid; e < dimK * dimV; e += nt) S[e] = S0 ? S0[e] : 0.0f;
	for (int c0 = 0; c0 < r.count; c0 += C) {
		int L = min(C, r.count - c0), first = r.first + c0;
		delta_load_rows<AS>(K, qkv, act & 2, width, first, L, d.kOff(h), dimK, 1.0f);
		delta_chunk_delta<AS>(U, QW, A, G, B, K, S, qkv, act & 2, g, beta, d, h, first, L);
		delta_load_rows<AS>(QW, qkv, act & 2, width, first, L, d.qOff(h), dimK, rsqrtf((float)dimK));
		__syncthreads();
		for (int e = tid; e < L * L; e += nt) {
			int t = e / L, s = e % L;
			float x = 0.0f;
			if (s <= t) {
				for (int i = 0; i < dimK; i++) x += QW[t * dimK + i] * K[s * dimK + i];
				x *= expf(G[t] - G[s]);
			}
			A[t * C + s] = x;
		}
		__syncthreads();
		for (int e = tid; e < L * dimV; e += nt) {
			int t = e / dimV, j = e % dimV;
			float o = 0.0f;
			for (int i = 0; i < dimK; i++) o += QW[t * dimK + i] * S[i * dimV + j];
			o *= expf(G[t]);
			for (int s = 0; s <= t; s++) o += A[t * C + s] * U[s * dimV + j];
			act_st<AS>(out, act & 1, ((long long)(first + t) * nHeadV + h) * dimV + j, o);
		}
		float gl = G[L - 1];
		if (tid < L) B[tid] = expf(gl - G[tid]); // β is spent: B holds the decay to the chunk's end
		__syncthreads();
		for (int e = tid; e < dimK * dimV; e += nt) {
			int i = e / dimV, j = e % dimV;
			float x = expf(gl) * S[e];
			for (int s = 0; s < L; s++) x += B[s] * K[s * dimK + i] * U[s * dimV + j];
			S[e] = x;
		}
		__syncthreads();
	}
	// The init state was read whole before the first chunk: the final
	// slot may be the same.
	if (r.fin >= 0) {
		float* S1 = state + ((long long)r.fin * nHeadV + h) * hs;
		for (int e = tid; e < dimK * dimV; e += nt) S1[e] = S[e];
	}
}

GRPO_KERNEL void __launch_bounds__(256) gated_delta_chunked_f32(float* out, const float* qkv, const float* g, const float* beta, float* state,
								const int* runs, int nTok, int slots, int nHeadK, int nHeadV, int dimK, int dimV) {
	gated_delta_chunked<false>(out, qkv, g, beta, state, runs, nTok, slots, nHeadK, nHeadV, dimK, dimV, 0);
}
GRPO_KERNEL void __launch_bounds__(256) gated_delta_chunked_as(void* out, const void* qkv, const float* g, const float* beta, float* state,
							       const int* runs, int nTok, int slots, int nHeadK, int nHeadV, int dimK, int dimV, int act) {
	gated_delta_chunked<true>(out, qkv, g, beta, state, runs, nTok, slots, nHeadK, nHeadV, dimK, dimV, act);
}
