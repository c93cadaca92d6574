// ssd.cuh: what the Mamba-2 scan's kernels share — the recurrent ones
// (ssd_scan.cu) and the chunked ones (ssd_chunked.cu,
// ssd_chunked_backward.cu): a call's sizes, dt, and the pieces of a chunk
// both chunked kernels build, so that the backward recomputes exactly the
// forward's values.
#pragma once
#include "linear.cuh"

// SSD_CHUNK is ssdChunk in ssm_ops.go: the tokens of one chunk of the
// chunked form.
#define SSD_CHUNK 64

// SSMDims are a scan call's sizes; a row of xBC is x | B | C, and head h
// reads group h / (nHeads/nGroups).
struct SSMDims {
	int nHeads, headDim, nGroups, stateSize;
	__device__ long long width() const { return (long long)nHeads * headDim + 2LL * nGroups * stateSize; }
	__device__ int group(int h) const { return h / (nHeads / nGroups); }
	__device__ long long bOff(int h) const { return (long long)nHeads * headDim + (long long)group(h) * stateSize; }
	__device__ long long cOff(int h) const { return (long long)nHeads * headDim + (long long)(nGroups + group(h)) * stateSize; }
	__device__ long long headState() const { return (long long)headDim * stateSize; }
};

// ssm_dt is softplus(raw + bias) (torch's: linear above 20) and, in *sp,
// its derivative.
__device__ __forceinline__ float ssm_dt(float raw, float bias, float* sp) {
	float z = raw + bias;
	if (z > 20.0f) {
		*sp = 1.0f;
		return z;
	}
	*sp = sigmoidf_(z);
	return log1pf(expf(z));
}

// ssd_runs_before is Σ over the runs before run r of ⌈count/chunk⌉: where
// run r's saved states start in a backward's scratch.
__device__ __forceinline__ long long ssd_runs_before(const int* runs, int r, int chunk) {
	long long off = 0;
	for (int i = 0; i < r; i++) off += (runs[4 * i + 1] + chunk - 1) / chunk;
	return off;
}

// SSD_ACT_* are the bits of the act flag word of the scan's _as kernels
// (ssm_ops.go's bf16Mask): which activations are bf16, read widened and
// stored rounded once. The f32 kernels pass 0, which the compiler folds.
#define SSD_ACT_OUT 1 // y (forward), dxBC (backward)
#define SSD_ACT_DY 2  // dy (backward)
#define SSD_ACT_XBC 4 // xBC

// ssd_load_rows copies cols columns from off of L rows of src (row
// stride width; bf16 if bf16 is set, widened) from row first into dst
// (row stride ld). No barrier. Its reads are counted under emu
// (GRPO_COUNT_READ), so a test can check that a chunked kernel reads its
// operands once.
__device__ __forceinline__ void ssd_load_rows(float* dst, int ld, const void* src, int bf16, long long width, int first, int L, long long off,
					      int cols) {
	if (bf16) { // a branch per call, not per element: the loop as the f32 one
		for (int e = threadIdx.x; e < L * cols; e += blockDim.x) {
			int t = e / cols, j = e % cols;
			GRPO_COUNT_READ(2);
			dst[t * ld + j] = __bfloat162float(((const __nv_bfloat16*)src)[(first + t) * width + off + j]);
		}
		return;
	}
	for (int e = threadIdx.x; e < L * cols; e += blockDim.x) {
		int t = e / cols, j = e % cols;
		GRPO_COUNT_READ(sizeof(float));
		dst[t * ld + j] = ((const float*)src)[(first + t) * width + off + j];
	}
}

// SSDChunkScalars are a chunk's per-token scalars in shared memory
// (SSD_CHUNK each): dt (w), softplus' (sp), the log-decay a_t = dt_t·A (a),
// exp(a_0 + … + a_t) (ea), exp(a_{t+1} + … + a_last) (el) and el·dt (wl,
// a token's weight in the state at the chunk's end). Every
// exponent is a sum of terms ≤ 0, never a difference of two running sums:
// after a strong decay those are thousands below zero, and f32 loses the
// small gaps between them (a relative error of 1e-4 in exp).
struct SSDChunkScalars {
	float *w, *sp, *a, *ea, *el, *wl;
};

// ssd_scalars lays SSDChunkScalars out from f (6·SSD_CHUNK floats).
__device__ __forceinline__ SSDChunkScalars ssd_scalars(float* f) {
	const int Q = SSD_CHUNK;
	SSDChunkScalars k = {f, f + Q, f + 2 * Q, f + 3 * Q, f + 4 * Q, f + 5 * Q};
	return k;
}

// ssd_chunk_scalars fills k for the L tokens of head h from token first.
// Its first barrier follows the per-token dt, so rows loaded just before
// need none of their own; it ends with a barrier.
__device__ __forceinline__ void ssd_chunk_scalars(SSDChunkScalars k, const float* dtRaw, int nHeads, int h, float bias, float A, int first, int L) {
	int tid = threadIdx.x;
	if (tid < L) {
		float sp, dt = ssm_dt(dtRaw[(long long)(first + tid) * nHeads + h], bias, &sp);
		k.w[tid] = dt;
		k.sp[tid] = sp;
		k.a[tid] = dt * A;
	}
	__syncthreads();
	if (tid == 0) {
		float pre = 0.0f, suf = 0.0f;
		for (int t = 0; t < L; t++) k.ea[t] = pre += k.a[t];
		for (int t = L - 1; t >= 0; t--) {
			k.el[t] = suf;
			suf += k.a[t];
		}
	}
	__syncthreads();
	if (tid < L) {
		k.ea[tid] = expf(k.ea[tid]);
		k.el[tid] = expf(k.el[tid]);
		k.wl[tid] = k.el[tid] * k.w[tid];
	}
	__syncthreads();
}

// ssd_pair_decays writes E[t,s] = exp(a_{s+1} + … + a_t) for s ≤ t and 0
// above (L × L, row stride ld), a row per thread summing from the
// diagonal. No barrier.
__device__ __forceinline__ void ssd_pair_decays(float* E, int ld, SSDChunkScalars k, int L) {
	for (int t = threadIdx.x; t < L; t += blockDim.x) {
		float acc = 0.0f;
		for (int s = t; s >= 0; s--) {
			E[t * ld + s] = expf(acc);
			acc += k.a[s];
		}
		for (int s = t + 1; s < L; s++) E[t * ld + s] = 0.0f;
	}
}

// ssd_chunk_advance moves a head's state over the chunk:
//
//	S ← exp(Λ_last)·S + Σ_s exp(Λ_last − Λ_s)·dt_s·x_s ⊗ B_s
//
// S is stateSize × headDim with row stride headDim + 1 (S[n·ld + p] =
// state[p, n]: threads of consecutive p read consecutive banks), X is L ×
// headDim, Bs L × ldB. Each thread updates its own elements: no barrier.
__device__ __forceinline__ void ssd_chunk_advance(float* S, const float* X, const float* Bs, int ldB, SSDChunkScalars k, int L, int headDim,
						  int stateSize) {
	int ld = headDim + 1;
	float decay = k.ea[L - 1];
	for (int e = threadIdx.x; e < headDim * stateSize; e += blockDim.x) {
		int n = e / headDim, p = e % headDim;
		float v = decay * S[n * ld + p];
		for (int s = 0; s < L; s++) v += k.wl[s] * X[s * headDim + p] * Bs[s * ldB + n];
		S[n * ld + p] = v;
	}
}
