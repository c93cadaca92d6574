// gated_delta_chunked_backward.cu: the gated delta rule's backward in
// chunks of 64 (kernels.LinearOps.GatedDeltaRuleBackward), the algorithm
// of kernels/kerneltest/linear_chunked_backward.go, which derives it and
// checks it against the float64 reference. One block per (run, value
// head) first walks the run forwards token by token, keeping the state at
// the start of every chunk in global scratch; it then walks the chunks
// from the last, recomputing each chunk's A, U, W, Δ and M from its start
// state and turning the gradient of the state after the chunk (dS, in
// global scratch, one per block) and the outputs' gradients into the
// chunk's gradients and the gradient of its start state. q̂ and k̂
// gradients go per value head to scratch, for gated_delta_l2_backward_f32
// (gated_delta_l2_backward.cu) to sum over each key head's value heads and
// take through the l2 norms. gated_delta_chunked_backward_as takes dqkv,
// dout and qkv each f32 or bf16 (act bits 0, 1, 2), read widened and
// stored rounded once.
// nvcc -ptx -arch=compute_90 gated_delta_chunked_backward.cu
#include "delta_chunk.cuh"

// delta_state_step applies one token to S (dimK × dimV, global or
// shared): S ← a·S + k̂δᵀ with δ = β(v − a·k̂ᵀS) left in delta (shared),
// v at element v of qkv (bf16 when qbf is set under AS). Ends with a
// barrier.
template <bool AS>
__device__ __forceinline__ void delta_state_step(float* S, const float* k, const void* qkv, int qbf, long long v, float a, float b, float* delta,
						 int dimK, int dimV) {
	for (int j = threadIdx.x; j < dimV; j += blockDim.x) {
		float p = 0.0f;
		for (int i = 0; i < dimK; i++) p += k[i] * S[i * dimV + j];
		delta[j] = b * (act_ld<AS>(qkv, qbf, v + j) - a * p);
	}
	__syncthreads();
	for (int e = threadIdx.x; e < dimK * dimV; e += blockDim.x) S[e] = a * S[e] + k[e / dimV] * delta[e % dimV];
	__syncthreads();
}

// chunk_offset is the first chunk state of run r: Σ over earlier runs of
// ⌈count/64⌉.
__device__ __forceinline__ long long chunk_offset(const int* runs, int r) {
	long long off = 0;
	for (int i = 0; i < r; i++) off += (runs[4 * i + 1] + DELTA_CHUNK - 1) / DELTA_CHUNK;
	return off;
}

// grid (nRuns, nHeadV), block (256), dynamic shared (linear_ops.go's
// chunkedBackwardShared): K̂ and Q̂/W (64 × dimK each), Δ, dO and dR (64 ×
// dimV each), A/Z, M/Y and P (64 × 64 each), G, β, dG and c (64 each).
// ck holds Σ⌈count/64⌉ × nHeadV chunk-start states, work nRuns × nHeadV
// states (each block's dS), dqh and dkh nTok × nHeadV × dimK.
template <bool AS>
__device__ __forceinline__ void gated_delta_chunked_backward(void* dqkv, float* dg, float* dbeta, float* dState, float* dqh, float* dkh, float* ck,
							     float* work, const void* dout, const void* qkv, const float* g, const float* beta,
							     const float* state, const int* runs, int nTok, int slots, int nHeadK, int nHeadV, int dimK,
							     int dimV, int act) {
	GRPO_DYNAMIC_SHARED(float, sh);
	GRPO_SHARED(float, scratch, [32]);
	const int C = DELTA_CHUNK;
	DeltaDims d = {nHeadK, nHeadV, dimK, dimV};
	int h = blockIdx.y, tid = threadIdx.x, nt = blockDim.x, lane = tid & 31, nw = nt >> 5;
	LinearRun r;
	if (!linear_run(runs, blockIdx.x, nTok, slots, &r)) return;
	long long hs = d.headState(), width = d.width();
	float* K = sh;
	float* QW = K + C * dimK;
	float* D = QW + C * dimK;
	float* dO = D + C * dimV;
	float* dR = dO + C * dimV;
	float* Ab = dR + C * dimV;
	float* Mb = Ab + C * C;
	float* Pb = Mb + C * C;
	float* G = Pb + C * C;
	float* B = G + C;
	float* dG = B + C;
	float* cs = dG + C;
	float* starts = ck + chunk_offset(runs, blockIdx.x) * nHeadV * hs;
	auto start = [&](int c) { return starts + ((long long)c * nHeadV + h) * hs; };
	float* dS = work + ((long long)blockIdx.x * nHeadV + h) * hs;
	float qscale = rsqrtf((float)dimK);

	// The chunks' start states, walking the run token by token with the
	// running state in dS's place.
	const float* S0 = r.init >= 0 ? state + ((long long)r.init * nHeadV + h) * hs : nullptr;
	for (long long e = tid; e < hs; e += nt) dS[e] = S0 ? S0[e] : 0.0f;
	__syncthreads();
	for (int i = 0; i < r.count; i++) {
		long long t = r.first + i;
		if (i % C == 0)
			for (long long e = tid; e < hs; e += nt) start(i / C)[e] = dS[e];
		delta_load_rows<AS>(K, qkv, act & 4, width, t, 1, d.kOff(h), dimK, 1.0f);
		__syncthreads();
		delta_state_step<AS>(dS, K, qkv, act & 4, t * width + d.vOff(h), expf(g[t * nHeadV + h]), beta[t * nHeadV + h], D, dimK, dimV);
	}
	const float* dFin = r.fin >= 0 ? dState + ((long long)r.fin * nHeadV + h) * hs : nullptr;
	for (long long e = tid; e < hs; e += nt) dS[e] = dFin ? dFin[e] : 0.0f;
	__syncthreads();

	for (int c0 = (r.count - 1) / C * C; c0 >= 0; c0 -= C) {
		int L = min(C, r.count - c0), first = r.first + c0;
		const float* S = start(c0 / C);
		delta_load_rows<AS>(K, qkv, act & 4, width, first, L, d.kOff(h), dimK, 1.0f);
		for (int e = tid; e < L * dimV; e += nt) dO[e] = act_ld<AS>(dout, act & 2, ((long long)(first + e / dimV) * nHeadV + h) * dimV + e % dimV);
		delta_chunk_delta<AS>(D, QW, Ab, G, B, K, S, qkv, act & 4, g, beta, d, h, first, L);
		float gl = G[L - 1];
		delta_load_rows<AS>(QW, qkv, act & 4, width, first, L, d.qOff(h), dimK, qscale);
		__syncthreads();
		for (int e = tid; e < L * L; e += nt) {
			int t = e / L, s = e % L;
			float x = 0.0f;
			if (s <= t) {
				for (int i = 0; i < dimK; i++) x += QW[t * dimK + i] * K[s * dimK + i];
				x *= expf(G[t] - G[s]);
			}
			Mb[t * C + s] = x;
		}
		__syncthreads();
		// dΔ_s = Σ_{t≥s} M[t,s]·dO_t + exp(G_L − G_s)·dSᵀk̂_s, then dR by
		// backward substitution, a column per thread.
		for (int e = tid; e < L * dimV; e += nt) {
			int s = e / dimV, j = e % dimV;
			float x = 0.0f, y = 0.0f;
			for (int t = s; t < L; t++) x += Mb[t * C + s] * dO[t * dimV + j];
			for (int i = 0; i < dimK; i++) y += K[s * dimK + i] * dS[(long long)i * dimV + j];
			dR[e] = x + expf(gl - G[s]) * y;
		}
		__syncthreads();
		for (int j = tid; j < dimV; j += nt)
			for (int s = L - 1; s >= 0; s--) {
				float x = dR[s * dimV + j];
				for (int t = s + 1; t < L; t++) x -= Ab[t * C + s] * dR[t * dimV + j];
				dR[s * dimV + j] = x;
			}
		__syncthreads();
		// Per pair: P = dM·M + dA·A (dG's pair terms), then M ← Y =
		// dM·exp(G_t − G_s) and A ← Z = dA·exp(G_t − G_s), the
		// coefficients of dq̂ and dk̂.
		for (int e = tid; e < L * L; e += nt) {
			int t = e / L, s = e % L;
			float p = 0.0f, y = 0.0f, z = 0.0f;
			if (s <= t) {
				float em = expf(G[t] - G[s]), dm = 0.0f, da = 0.0f;
				for (int j = 0; j < dimV; j++) {
					dm += dO[t * dimV + j] * D[s * dimV + j];
					da -= dR[t * dimV + j] * D[s * dimV + j];
				}
				y = dm * em;
				if (s < t) {
					p = dm * Mb[t * C + s] + da * Ab[t * C + s];
					z = da * em;
				}
			}
			Pb[t * C + s] = p;
			Mb[t * C + s] = y;
			Ab[t * C + s] = z;
		}
		float ds0 = 0.0f;
		for (long long e = tid; e < hs; e += nt) ds0 += dS[e] * S[e];
		ds0 = block_sum(ds0, scratch); // its barriers also end the pair pass
		__syncthreads();
		// dq̂ and dk̂, an element per thread.
		for (int e = tid; e < L * dimK; e += nt) {
			int t = e / dimK, i = e % dimK;
			float sdo = 0.0f, sdr = 0.0f, dsd = 0.0f;
			for (int j = 0; j < dimV; j++) {
				float sij = S[(long long)i * dimV + j];
				sdo += sij * dO[t * dimV + j];
				sdr += sij * dR[t * dimV + j];
				dsd += dS[(long long)i * dimV + j] * D[t * dimV + j];
			}
			float dq = expf(G[t]) * sdo;
			float dk = -B[t] * expf(G[t]) * sdr + expf(gl - G[t]) * dsd;
			for (int s = 0; s <= t; s++) {
				dq += Mb[t * C + s] * K[s * dimK + i];
				if (s < t) dk += B[t] * Ab[t * C + s] * K[s * dimK + i];
			}
			for (int u = t; u < L; u++) {
				dk += Mb[u * C + t] * QW[u * dimK + i];
				if (u > t) dk += B[u] * Ab[u * C + t] * K[u * dimK + i];
			}
			long long at = ((long long)(first + t) * nHeadV + h) * dimK + i;
			dqh[at] = dq;
			dkh[at] = dk;
		}
		for (int e = tid; e < L * dimV; e += nt) act_st<AS>(dqkv, act & 1, (first + e / dimV) * width + d.vOff(h) + e % dimV, B[e / dimV] * dR[e]);
		// dβ and dG per token, a warp each.
		for (int t = tid >> 5; t < L; t += nw) {
			float db = 0.0f, inter = 0.0f, c = 0.0f;
			for (int i = lane; i < dimK; i += 32) {
				float sdo = 0.0f, sdr = 0.0f, dsd = 0.0f;
				for (int j = 0; j < dimV; j++) {
					float sij = S[(long long)i * dimV + j];
					sdo += sij * dO[t * dimV + j];
					sdr += sij * dR[t * dimV + j];
					dsd += dS[(long long)i * dimV + j] * D[t * dimV + j];
				}
				inter += expf(G[t]) * (QW[t * dimK + i] * sdo - B[t] * K[t * dimK + i] * sdr);
				c += K[t * dimK + i] * dsd;
			}
			for (int j = lane; j < dimV; j += 32) {
				float sk = 0.0f;
				for (int i = 0; i < dimK; i++) sk += K[t * dimK + i] * S[(long long)i * dimV + j];
				db += dR[t * dimV + j] * (act_ld<AS>(qkv, act & 4, (first + t) * width + d.vOff(h) + j) - expf(G[t]) * sk);
			}
			for (int s = lane; s < t; s += 32) {
				float kk = 0.0f;
				for (int i = 0; i < dimK; i++) kk += K[t * dimK + i] * K[s * dimK + i];
				db += Ab[t * C + s] * kk;
			}
			float pr = 0.0f;
			for (int s = lane; s < L; s += 32) pr += Pb[t * C + s] - Pb[s * C + t];
			db = warp_sum(db);
			c = warp_sum(c) * expf(gl - G[t]);
			float dgt = warp_sum(inter) + warp_sum(pr) - c;
			if (lane == 0) {
				dbeta[(long long)(first + t) * nHeadV + h] = db;
				dG[t] = dgt;
				cs[t] = c;
			}
		}
		__syncthreads();
		if (tid == 0) {
			float sc = 0.0f;
			for (int s = 0; s < L; s++) sc += cs[s];
			dG[L - 1] += expf(gl) * ds0 + sc;
			float acc = 0.0f;
			for (int t = L - 1; t >= 0; t--) {
				acc += dG[t];
				dg[(long long)(first + t) * nHeadV + h] = acc;
			}
		}
		// dS ← exp(G_L)·dS + Σ_t exp(G_t)(q̂_t dO_tᵀ − β_t k̂_t dR_tᵀ).
		for (long long e = tid; e < hs; e += nt) {
			int i = (int)(e / dimV), j = (int)(e % dimV);
			float x = expf(gl) * dS[e];
			for (int t = 0; t < L; t++) x += expf(G[t]) * (QW[t * dimK + i] * dO[t * dimV + j] - B[t] * K[t * dimK + i] * dR[t * dimV + j]);
			dS[e] = x;
		}
		__syncthreads();
	}
	// Runs may share an init slot: their gradients add.
	if (r.init >= 0) {
		float* dI = dState + ((long long)r.init * nHeadV + h) * hs;
		for (long long e = tid; e < hs; e += nt) atomicAdd(&dI[e], dS[e]);
	}
}

GRPO_KERNEL void __launch_bounds__(256)
    gated_delta_chunked_backward_f32(float* dqkv, float* dg, float* dbeta, float* dState, float* dqh, float* dkh, float* ck, float* work,
				     const float* dout, const float* qkv, const float* g, const float* beta, const float* state, const int* runs,
				     int nTok, int slots, int nHeadK, int nHeadV, int dimK, int dimV) {
	gated_delta_chunked_backward<false>(dqkv, dg, dbeta, dState, dqh, dkh, ck, work, dout, qkv, g, beta, state, runs, nTok, slots, nHeadK, nHeadV,
					    dimK, dimV, 0);
}
GRPO_KERNEL void __launch_bounds__(256)
    gated_delta_chunked_backward_as(void* dqkv, float* dg, float* dbeta, float* dState, float* dqh, float* dkh, float* ck, float* work,
				    const void* dout, const void* qkv, const float* g, const float* beta, const float* state, const int* runs, int nTok,
				    int slots, int nHeadK, int nHeadV, int dimK, int dimV, int act) {
	gated_delta_chunked_backward<true>(dqkv, dg, dbeta, dState, dqh, dkh, ck, work, dout, qkv, g, beta, state, runs, nTok, slots, nHeadK, nHeadV,
					   dimK, dimV, act);
}
