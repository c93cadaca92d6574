// ssd_chunked_backward.cu: the Mamba-2 scan's backward in chunks of 64
// (kernels.SSMOps.SSDScanBackward for long runs), ssd_chunked.cu's
// products taken backwards. One block per (run, head) first walks the run
// forwards a chunk at a time, keeping the state before every chunk in
// global scratch; it then walks the chunks from the last with the
// gradient G of the state after the chunk in shared memory. With a
// chunk's S₀, Λ, dt (w), M as in ssd_chunked.cu and
//
//	E[t,s]  = exp(Λ_t − Λ_s),  e_s = exp(Λ_last − Λ_s)     (s ≤ t)
//	CB[t,s] = E·(C_t·B_s),  DX[t,s] = E·(dy_t·x_s),  P[t,s] = E·(C_t·B_s)(dy_t·x_s)
//
// the gradients are
//
//	dx_s  = D·dy_s + w_s·Σ_{t≥s} CB[t,s]·dy_t + w_s·e_s·G·B_s
//	dB_s  = w_s·Σ_{t≥s} DX[t,s]·C_t + w_s·e_s·Gᵀx_s
//	dC_t  = exp(Λ_t)·S₀ᵀdy_t + Σ_{s≤t} w_s·DX[t,s]·B_s
//	dw_s  = Σ_{t≥s} P[t,s] + U_s,   U_s = e_s·x_sᵀ·G·B_s
//	dΛ_t  = exp(Λ_t)·C_t·S₀ᵀdy_t + Σ_{s≤t} w_s·P[t,s] − w_t·(Σ_{t'≥t} P[t',t] + U_t)
//	        (+ exp(Λ_last)·⟨G, S₀⟩ + Σ_s w_s·U_s at t = last)
//	G₀    = exp(Λ_last)·G + Σ_t exp(Λ_t)·dy_t ⊗ C_t
//
// and dtRaw's gradient is (dw_t + A·Σ_{t'≥t} dΛ_t')·softplus'(·), Λ being
// a running sum of dt·A. G₀ is the gradient of the state before the
// chunk, the previous chunk's G. B's and C's gradients go per head to
// scratch, for ssd_group_sum_f32 (ssd_backward_sums.cu) to sum over a
// group's heads in head order; x's and dtRaw's have one writer. No
// atomics: every sum has one owner (a thread, or a warp's fixed
// shuffle tree), so the bits do not depend on the order blocks run in.
// kernels/emu's TestSSDScanPaths and TestSSDChunkedEqualsRecurrent hold
// it to the reference and to the recurrence.
// nvcc -ptx -arch=compute_90 ssd_chunked_backward.cu
#include "ssd.cuh"

// grid (nRuns, nHeads), block (256), dynamic shared (ssm_ops.go's
// ssdChunkedBackwardShared): G (stateSize × (headDim+1)), B and C (64 ×
// (stateSize+1) each), x and dy (64 × headDim each), CB, DX and P (64 ×
// 64 each), the chunk's six scalars and α, U, dΛ (64 each). ck holds
// Σ⌈count/64⌉ × nHeads × headDim × stateSize saved states. It writes x's
// and dtRaw's gradients for the run's tokens, head h's dB | dC into part
// (nTok × nHeads × 2·stateSize), and the gradient of the run's initial
// state over the run's first saved state, for ssd_init_sum_f32 to add
// into dState[init] (runs may share it). act: ssd.cuh's SSD_ACT_* bits
// (dxBC, dy, xBC).
__device__ __forceinline__ void ssd_chunked_backward(void* dxBC, float* ddtRaw, float* part, float* ck, const float* dState, const void* dy,
						     const void* xBC, const float* dtRaw, const float* aLog, const float* dtBias, const float* d,
						     const float* state, const int* runs, int nTok, int slots, int nHeads, int headDim, int nGroups,
						     int stateSize, int act) {
	GRPO_DYNAMIC_SHARED(float, sh);
	GRPO_SHARED(float, scratch, [32]);
	const int Q = SSD_CHUNK;
	SSMDims m = {nHeads, headDim, nGroups, stateSize};
	int h = blockIdx.y, tid = threadIdx.x, nt = blockDim.x, lane = tid & 31, nw = nt >> 5;
	int P = headDim, N = stateSize, ld = P + 1, ldB = N + 1, xb = act & SSD_ACT_XBC;
	LinearRun r;
	if (!linear_run(runs, blockIdx.x, nTok, slots, &r)) return;
	float* G = sh;
	float* Bs = G + N * ld;
	float* Cs = Bs + Q * ldB;
	float* X = Cs + Q * ldB;
	float* dY = X + Q * P;
	float* CB = dY + Q * P;
	float* DX = CB + Q * Q;
	float* PP = DX + Q * Q;
	float* f = PP + Q * Q;
	SSDChunkScalars k = ssd_scalars(f);
	float* alpha = f + 6 * Q;
	float* U = f + 7 * Q;
	float* dl = f + 8 * Q;
	long long width = m.width(), hs = m.headState(), per = (long long)nHeads * hs;
	float* starts = ck + ssd_runs_before(runs, blockIdx.x, Q) * per + h * hs;
	float A = -expf(aLog[h]), D = d[h], bias = dtBias[h];

	// The chunks' start states (stateSize-major in G's place while it
	// walks, headDim-major in ck).
	const float* S0 = r.init >= 0 ? state + r.init * per + h * hs : nullptr;
	for (int e = tid; e < P * N; e += nt) G[(e % N) * ld + e / N] = S0 ? S0[e] : 0.0f;
	__syncthreads();
	for (int c0 = 0; c0 < r.count; c0 += Q) {
		int L = min(Q, r.count - c0), first = r.first + c0;
		float* save = starts + (long long)(c0 / Q) * per;
		for (int e = tid; e < P * N; e += nt) save[e] = G[(e % N) * ld + e / N];
		ssd_load_rows(Bs, ldB, xBC, xb, width, first, L, m.bOff(h), N);
		ssd_load_rows(X, P, xBC, xb, width, first, L, (long long)h * P, P);
		ssd_chunk_scalars(k, dtRaw, nHeads, h, bias, A, first, L); // its barriers also end the save
		ssd_chunk_advance(G, X, Bs, ldB, k, L, P, N);
		__syncthreads();
	}
	const float* dFin = r.fin >= 0 ? dState + r.fin * per + h * hs : nullptr;
	for (int e = tid; e < P * N; e += nt) G[(e % N) * ld + e / N] = dFin ? dFin[e] : 0.0f;

	for (int c0 = (r.count - 1) / Q * Q; c0 >= 0; c0 -= Q) {
		int L = min(Q, r.count - c0), first = r.first + c0;
		const float* S = starts + (long long)(c0 / Q) * per; // headDim × stateSize, global
		ssd_load_rows(Bs, ldB, xBC, xb, width, first, L, m.bOff(h), N);
		ssd_load_rows(Cs, ldB, xBC, xb, width, first, L, m.cOff(h), N);
		ssd_load_rows(X, P, xBC, xb, width, first, L, (long long)h * P, P);
		ssd_load_rows(dY, P, dy, act & SSD_ACT_DY, (long long)nHeads * P, first, L, (long long)h * P, P);
		ssd_chunk_scalars(k, dtRaw, nHeads, h, bias, A, first, L);
		ssd_pair_decays(PP, Q, k, L);
		__syncthreads();
		for (int e = tid; e < L * L; e += nt) {
			int t = e / L, s = e % L;
			float cb = 0.0f, dx = 0.0f, em = PP[t * Q + s]; // 0 above the diagonal
			if (s <= t) {
				for (int n = 0; n < N; n++) cb += Cs[t * ldB + n] * Bs[s * ldB + n];
				for (int p = 0; p < P; p++) dx += dY[t * P + p] * X[s * P + p];
			}
			CB[t * Q + s] = em * cb;
			DX[t * Q + s] = em * dx;
			PP[t * Q + s] = em * cb * dx;
		}
		__syncthreads();
		// x: a (token, column) per thread.
		for (int e = tid; e < L * P; e += nt) {
			int s = e / P, p = e % P;
			float intra = 0.0f, gb = 0.0f;
			for (int t = s; t < L; t++) intra += CB[t * Q + s] * dY[t * P + p];
			for (int n = 0; n < N; n++) gb += G[n * ld + p] * Bs[s * ldB + n];
			st_as(dxBC, act & SSD_ACT_OUT, (first + s) * width + (long long)h * P + p, D * dY[s * P + p] + k.w[s] * intra + k.wl[s] * gb);
		}
		// B and C, and U and α (sums over n) on the way: a warp per
		// token, its lanes over the state columns.
		for (int s = tid >> 5; s < L; s += nw) {
			float* pB = part + ((long long)(first + s) * nHeads + h) * 2 * N;
			float u = 0.0f;
			for (int n = lane; n < N; n += 32) {
				float intra = 0.0f, gx = 0.0f;
				for (int t = s; t < L; t++) intra += DX[t * Q + s] * Cs[t * ldB + n];
				for (int p = 0; p < P; p++) gx += G[n * ld + p] * X[s * P + p];
				pB[n] = k.w[s] * intra + k.wl[s] * gx;
				u += k.el[s] * gx * Bs[s * ldB + n];
			}
			u = warp_sum(u);
			if (lane == 0) U[s] = u;
		}
		for (int t = tid >> 5; t < L; t += nw) {
			float* pC = part + ((long long)(first + t) * nHeads + h) * 2 * N + N;
			float al = 0.0f;
			for (int n = lane; n < N; n += 32) {
				float inter = 0.0f, intra = 0.0f;
				for (int p = 0; p < P; p++) inter += S[(long long)p * N + n] * dY[t * P + p];
				for (int s = 0; s <= t; s++) intra += k.w[s] * DX[t * Q + s] * Bs[s * ldB + n];
				inter *= k.ea[t];
				pC[n] = inter + intra;
				al += inter * Cs[t * ldB + n];
			}
			al = warp_sum(al);
			if (lane == 0) alpha[t] = al;
		}
		float gs = 0.0f;
		for (int e = tid; e < P * N; e += nt) gs += G[(e % N) * ld + e / N] * S[e];
		gs = block_sum(gs, scratch); // its barriers also end the passes above
		__syncthreads();
		// dΛ's and dw's per-token parts, a warp per token (dw in U).
		for (int t = tid >> 5; t < L; t += nw) {
			float row = 0.0f, col = 0.0f;
			for (int s = lane; s <= t; s += 32) row += k.w[s] * PP[t * Q + s];
			for (int u = t + lane; u < L; u += 32) col += PP[u * Q + t];
			row = warp_sum(row);
			col = warp_sum(col);
			if (lane == 0) {
				float dw = col + U[t];
				dl[t] = alpha[t] + row - k.w[t] * dw;
				alpha[t] = k.w[t] * U[t]; // Σ_s w_s·U_s's terms, for thread 0
				U[t] = dw;
			}
		}
		__syncthreads();
		if (tid == 0) {
			float acc = k.ea[L - 1] * gs;
			for (int s = 0; s < L; s++) acc += alpha[s];
			for (int t = L - 1; t >= 0; t--) {
				acc += dl[t];
				ddtRaw[(long long)(first + t) * nHeads + h] = (U[t] + A * acc) * k.sp[t];
			}
		}
		// G ← exp(Λ_last)·G + Σ_t exp(Λ_t)·dy_t ⊗ C_t, each thread its own
		// elements (the passes that read G ended above).
		for (int e = tid; e < P * N; e += nt) {
			int n = e / P, p = e % P;
			float v = k.ea[L - 1] * G[n * ld + p];
			for (int t = 0; t < L; t++) v += k.ea[t] * dY[t * P + p] * Cs[t * ldB + n];
			G[n * ld + p] = v;
		}
		__syncthreads();
	}
	// The first chunk's start state was read above (the last barrier
	// ended it): the initial state's gradient takes its place.
	if (r.init >= 0) {
		for (int e = tid; e < P * N; e += nt) starts[e] = G[(e % N) * ld + e / N];
	}
}

GRPO_KERNEL void __launch_bounds__(256)
    ssd_chunked_backward_f32(float* dxBC, float* ddtRaw, float* part, float* ck, const float* dState, const float* dy, const float* xBC,
			     const float* dtRaw, const float* aLog, const float* dtBias, const float* d, const float* state, const int* runs,
			     int nTok, int slots, int nHeads, int headDim, int nGroups, int stateSize) {
	ssd_chunked_backward(dxBC, ddtRaw, part, ck, dState, dy, xBC, dtRaw, aLog, dtBias, d, state, runs, nTok, slots, nHeads, headDim,
			     nGroups, stateSize, 0);
}
// ssd_chunked_backward_as is ssd_chunked_backward_f32 over bf16
// activations (act: SSD_ACT_OUT for dxBC's x columns, SSD_ACT_DY,
// SSD_ACT_XBC).
GRPO_KERNEL void __launch_bounds__(256)
    ssd_chunked_backward_as(void* dxBC, float* ddtRaw, float* part, float* ck, const float* dState, const void* dy, const void* xBC,
			    const float* dtRaw, const float* aLog, const float* dtBias, const float* d, const float* state, const int* runs,
			    int nTok, int slots, int nHeads, int headDim, int nGroups, int stateSize, int act) {
	ssd_chunked_backward(dxBC, ddtRaw, part, ck, dState, dy, xBC, dtRaw, aLog, dtBias, d, state, runs, nTok, slots, nHeads, headDim,
			     nGroups, stateSize, act);
}
