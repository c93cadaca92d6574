// ssd_chunked.cu: the Mamba-2 scan over runs in chunks of 64 tokens
// (kernels.SSMOps.SSDScan for prefill and training; ssm_ops.go chooses it
// over ssd_scan.cu's recurrence for long runs) — the "state space
// duality" form of the Mamba-2 paper. One block per (run, head) walks the
// run's chunks in order with the head's state in shared memory. With
// Λ_t = A·(dt_0 + … + dt_t) the running log-decay within a chunk and S₀
// the state before it, the recurrence S_t = exp(dt_t·A)·S_{t−1} + dt_t·x_t
// ⊗ B_t unrolls to
//
//	S_t = exp(Λ_t)·S₀ + Σ_{s≤t} exp(Λ_t − Λ_s)·dt_s·x_s ⊗ B_s
//
// so a chunk is three products spread over the block:
//
//	M[t,s] = exp(Λ_t − Λ_s)·dt_s·(C_t·B_s)      (s ≤ t, else 0)
//	y_t    = exp(Λ_t)·S₀·C_t + Σ_{s≤t} M[t,s]·x_s + D·x_t
//	S_L    = exp(Λ_last)·S₀ + Σ_s exp(Λ_last − Λ_s)·dt_s·x_s ⊗ B_s
//
// Every exponent is ≤ 0, and each is summed over its own tokens
// (ssd.cuh), never taken as a difference of running sums. kernels/emu's
// TestSSDScanPaths and TestSSDChunkedEqualsRecurrent hold it to the
// reference and to the recurrence. CPU twin: kernels/cpu/ssm_scan.go.
// nvcc -ptx -arch=compute_90 ssd_chunked.cu
#include "ssd.cuh"

// grid (nRuns, nHeads), block (256), dynamic shared (ssm_ops.go's
// ssdChunkedShared): S (stateSize × (headDim+1)), B and C (64 ×
// (stateSize+1) each), x (64 × headDim), M (64 × 64), and the chunk's
// six scalars (64 each). act: ssd.cuh's SSD_ACT_* bits (y, xBC).
__device__ __forceinline__ void ssd_chunked(void* y, const void* xBC, const float* dtRaw, const float* aLog, const float* dtBias, const float* d,
					    float* state, const int* runs, int nTok, int slots, int nHeads, int headDim, int nGroups, int stateSize,
					    int act) {
	GRPO_DYNAMIC_SHARED(float, sh);
	const int Q = SSD_CHUNK;
	SSMDims m = {nHeads, headDim, nGroups, stateSize};
	int h = blockIdx.y, tid = threadIdx.x, nt = blockDim.x, P = headDim, N = stateSize, ld = P + 1, ldB = N + 1;
	LinearRun r;
	if (!linear_run(runs, blockIdx.x, nTok, slots, &r)) return;
	float* S = sh;
	float* Bs = S + N * ld;
	float* Cs = Bs + Q * ldB;
	float* X = Cs + Q * ldB;
	float* M = X + Q * P;
	float* f = M + Q * Q;
	SSDChunkScalars k = ssd_scalars(f);
	long long width = m.width(), hs = m.headState(), per = (long long)nHeads * hs;
	const float* S0 = r.init >= 0 ? state + r.init * per + h * hs : nullptr;
	for (int e = tid; e < P * N; e += nt) S[(e % N) * ld + e / N] = S0 ? S0[e] : 0.0f;
	float A = -expf(aLog[h]), D = d[h], bias = dtBias[h];
	for (int c0 = 0; c0 < r.count; c0 += Q) {
		int L = min(Q, r.count - c0), first = r.first + c0;
		ssd_load_rows(Bs, ldB, xBC, act & SSD_ACT_XBC, width, first, L, m.bOff(h), N);
		ssd_load_rows(Cs, ldB, xBC, act & SSD_ACT_XBC, width, first, L, m.cOff(h), N);
		ssd_load_rows(X, P, xBC, act & SSD_ACT_XBC, width, first, L, (long long)h * P, P);
		ssd_chunk_scalars(k, dtRaw, nHeads, h, bias, A, first, L);
		ssd_pair_decays(M, Q, k, L);
		__syncthreads();
		for (int e = tid; e < L * L; e += nt) {
			int t = e / L, s = e % L;
			if (s > t) continue;
			float x = 0.0f;
			for (int n = 0; n < N; n++) x += Cs[t * ldB + n] * Bs[s * ldB + n];
			M[t * Q + s] *= x * k.w[s];
		}
		__syncthreads();
		for (int e = tid; e < L * P; e += nt) {
			int t = e / P, p = e % P;
			float inter = 0.0f, intra = 0.0f;
			for (int n = 0; n < N; n++) inter += S[n * ld + p] * Cs[t * ldB + n];
			for (int s = 0; s <= t; s++) intra += M[t * Q + s] * X[s * P + p];
			st_as(y, act & SSD_ACT_OUT, ((long long)(first + t) * nHeads + h) * P + p, k.ea[t] * inter + intra + D * X[t * P + p]);
		}
		__syncthreads(); // y read S before it moves on
		ssd_chunk_advance(S, X, Bs, ldB, k, L, P, N);
		__syncthreads();
	}
	// The init state was read whole before the first chunk: the final
	// slot may be the same.
	if (r.fin >= 0) {
		float* S1 = state + r.fin * per + h * hs;
		for (int e = tid; e < P * N; e += nt) S1[e] = S[(e % N) * ld + e / N];
	}
}

GRPO_KERNEL void __launch_bounds__(256) ssd_chunked_f32(float* y, const float* xBC, const float* dtRaw, const float* aLog, const float* dtBias,
							 const float* d, float* state, const int* runs, int nTok, int slots, int nHeads, int headDim,
							 int nGroups, int stateSize) {
	ssd_chunked(y, xBC, dtRaw, aLog, dtBias, d, state, runs, nTok, slots, nHeads, headDim, nGroups, stateSize, 0);
}
// ssd_chunked_as is ssd_chunked_f32 over bf16 activations (act:
// SSD_ACT_OUT for y, SSD_ACT_XBC for xBC).
GRPO_KERNEL void __launch_bounds__(256) ssd_chunked_as(void* y, const void* xBC, const float* dtRaw, const float* aLog, const float* dtBias,
							const float* d, float* state, const int* runs, int nTok, int slots, int nHeads, int headDim,
							int nGroups, int stateSize, int act) {
	ssd_chunked(y, xBC, dtRaw, aLog, dtBias, d, state, runs, nTok, slots, nHeads, headDim, nGroups, stateSize, act);
}
