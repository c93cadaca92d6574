// delta_chunk.cuh: what the chunked gated delta rule's forward
// (gated_delta_chunked.cu) and backward (gated_delta_chunked_backward.cu)
// both build of a chunk, so that the backward recomputes exactly the
// forward's values.
#pragma once
#include "linear.cuh"

// DELTA_CHUNK is deltaChunk in linear_ops.go.
#define DELTA_CHUNK 64

// delta_chunk_delta builds, for the L tokens of head h from token first,
// given K̂ in K (L × dimK) and the chunk's start state S (dimK × dimV):
//
//	G, B  the running sum of g and β (L each)
//	A     β_t·exp(G_t − G_s)·k̂_t·k̂_s for s < t, else 0 (L × L, ld 64)
//	W     (I + A)⁻¹·(β⊙exp(G)⊙K̂)  (L × dimK)
//	U     (I + A)⁻¹·(β⊙V) − W·S = Δ  (L × dimV)
//
// by forward substitution, a column of U or W per thread (row t of a
// column needs only that column's rows s < t). Its first barrier follows
// the sums of g and β, so K and S may be written just before without
// one; it ends with a barrier. V is read from qkv (bf16 when qbf is set
// under AS).
template <bool AS>
__device__ __forceinline__ void delta_chunk_delta(float* U, float* W, float* A, float* G, float* B, const float* K, const float* S,
						  const void* qkv, int qbf, const float* g, const float* beta, DeltaDims d, int h, int first, int L) {
	const int C = DELTA_CHUNK;
	int tid = threadIdx.x, nt = blockDim.x, dimK = d.dimK, dimV = d.dimV;
	long long width = d.width();
	if (tid == 0) {
		float acc = 0.0f;
		for (int t = 0; t < L; t++) {
			acc += g[(long long)(first + t) * d.nHeadV + h];
			G[t] = acc;
			B[t] = beta[(long long)(first + t) * d.nHeadV + h];
		}
	}
	__syncthreads();
	for (int e = tid; e < L * L; e += nt) {
		int t = e / L, s = e % L;
		float x = 0.0f;
		if (s < t) {
			for (int i = 0; i < dimK; i++) x += K[t * dimK + i] * K[s * dimK + i];
			x *= B[t] * expf(G[t] - G[s]);
		}
		A[t * C + s] = x;
	}
	__syncthreads();
	for (int col = tid; col < dimV + dimK; col += nt) {
		bool isU = col < dimV;
		int j = isU ? col : col - dimV, ld = isU ? dimV : dimK;
		float* M = isU ? U : W;
		for (int t = 0; t < L; t++) {
			float x = isU ? B[t] * act_ld<AS>(qkv, qbf, (first + t) * width + d.vOff(h) + j) : B[t] * expf(G[t]) * K[t * dimK + j];
			for (int s = 0; s < t; s++) x -= A[t * C + s] * M[s * ld + j];
			M[t * ld + j] = x;
		}
	}
	__syncthreads();
	for (int e = tid; e < L * dimV; e += nt) {
		int t = e / dimV, j = e % dimV;
		float ws = 0.0f;
		for (int i = 0; i < dimK; i++) ws += W[t * dimK + i] * S[i * dimV + j];
		U[e] -= ws;
	}
	__syncthreads();
}
