// gated_delta_backward.cu: the gated delta rule's backward
// (kernels.LinearOps.GatedDeltaRuleBackward), token by token in reverse.
// One block per (run, value head) first walks the run forwards, keeping
// the state at the start of every segment of DELTA_SEG tokens in global
// scratch; it then walks back through each segment, recomputing the state
// before each token from the segment's start (the state is not
// invertible in float32: undoing a decay of e⁻⁵ amplifies rounding by
// e⁵), with the state and its gradient in shared memory. q̂ and k̂
// gradients go per value head to scratch; gated_delta_l2_backward_f32
// then sums them over each key head's value heads and takes them through
// the l2 norms. The CPU twin is kernels/cpu/linear_delta_backward.go.
// nvcc -ptx -arch=compute_90 gated_delta_backward.cu
#include "linear.cuh"

// DELTA_SEG is deltaSegment in linear_ops.go.
#define DELTA_SEG 16

// delta_forward_step applies one token to S (shared, dimK × dimV): S ←
// a·S + k̂δᵀ, δ = β(v − a·k̂ᵀS), with δ (and a·k̂ᵀS in pred when not
// null) left in shared memory. k (shared) holds k̂. Ends with a barrier.
__device__ __forceinline__ void delta_forward_step(float* S, const float* k, const float* v, float a, float b, float* delta, float* pred,
						   int dimK, int dimV) {
	for (int j = threadIdx.x; j < dimV; j += blockDim.x) {
		float p = 0.0f;
		for (int i = 0; i < dimK; i++) p += k[i] * S[i * dimV + j];
		p *= a;
		if (pred) pred[j] = p;
		delta[j] = b * (v[j] - p);
	}
	__syncthreads();
	for (int e = threadIdx.x; e < dimK * dimV; e += blockDim.x) S[e] = a * S[e] + k[e / dimV] * delta[e % dimV];
	__syncthreads();
}

// seg_offset is the first checkpoint of run r: Σ over earlier runs of
// ⌈count/DELTA_SEG⌉.
__device__ __forceinline__ long long seg_offset(const int* runs, int r) {
	long long off = 0;
	for (int i = 0; i < r; i++) off += (runs[4 * i + 1] + DELTA_SEG - 1) / DELTA_SEG;
	return off;
}

// grid (nRuns, nHeadV), block (256), dynamic shared (linear_ops.go's
// backwardShared): S and dS (dimK × dimV each), q̂ and k̂ (dimK each),
// δ, a·k̂ᵀS, dδ and the output gradient (dimV each). ck holds
// (Σ ⌈count/DELTA_SEG⌉) × nHeadV states; dqh and dkh are nTok × nHeadV ×
// dimK.
GRPO_KERNEL void __launch_bounds__(256) gated_delta_backward_f32(float* dqkv, float* dg, float* dbeta, float* dState, float* dqh, float* dkh,
								 float* ck, const float* dout, const float* qkv, const float* g, const float* beta,
								 const float* state, const int* runs, int nTok, int slots, int nHeadK, int nHeadV,
								 int dimK, int dimV) {
	GRPO_DYNAMIC_SHARED(float, sh);
	GRPO_SHARED(float, scratch, [32]);
	DeltaDims d = {nHeadK, nHeadV, dimK, dimV};
	int h = blockIdx.y, tid = threadIdx.x, nt = blockDim.x;
	LinearRun r;
	if (!linear_run(runs, blockIdx.x, nTok, slots, &r)) return;
	long long hs = d.headState(), width = d.width();
	float *S = sh, *dS = S + hs, *q = dS + hs, *k = q + dimK;
	float *delta = k + dimK, *pred = delta + dimV, *ddelta = pred + dimV, *dov = ddelta + dimV;
	float* cks = ck + seg_offset(runs, blockIdx.x) * nHeadV * hs;
	float qscale = rsqrtf((float)dimK);
	auto seg_state = [&](int seg) { return cks + ((long long)seg * nHeadV + h) * hs; };
	auto tok = [&](int i) { return (long long)(r.first + i); };

	const float* S0 = r.init >= 0 ? state + ((long long)r.init * nHeadV + h) * hs : nullptr;
	for (int e = tid; e < hs; e += nt) S[e] = S0 ? S0[e] : 0.0f;
	__syncthreads();
	for (int i = 0; i < r.count; i++) {
		if (i % DELTA_SEG == 0)
			for (int e = tid; e < hs; e += nt) seg_state(i / DELTA_SEG)[e] = S[e];
		delta_load_rows(k, qkv, width, tok(i), 1, d.kOff(h), dimK, 1.0f);
		__syncthreads();
		delta_forward_step(S, k, qkv + tok(i) * width + d.vOff(h), expf(g[tok(i) * nHeadV + h]), beta[tok(i) * nHeadV + h], delta, nullptr, dimK,
				   dimV);
	}
	const float* dFin = r.fin >= 0 ? dState + ((long long)r.fin * nHeadV + h) * hs : nullptr;
	for (int e = tid; e < hs; e += nt) dS[e] = dFin ? dFin[e] : 0.0f;

	for (int i = r.count - 1; i >= 0; i--) {
		// The state before token i, from its segment's start.
		int s0 = i / DELTA_SEG * DELTA_SEG;
		__syncthreads();
		for (int e = tid; e < hs; e += nt) S[e] = seg_state(i / DELTA_SEG)[e];
		__syncthreads();
		for (int j = s0; j < i; j++) {
			delta_load_rows(k, qkv, width, tok(j), 1, d.kOff(h), dimK, 1.0f);
			__syncthreads();
			delta_forward_step(S, k, qkv + tok(j) * width + d.vOff(h), expf(g[tok(j) * nHeadV + h]), beta[tok(j) * nHeadV + h], delta, nullptr,
					   dimK, dimV);
		}
		long long t = tok(i);
		const float* v = qkv + t * width + d.vOff(h);
		float a = expf(g[t * nHeadV + h]), b = beta[t * nHeadV + h];
		delta_load_rows(q, qkv, width, t, 1, d.qOff(h), dimK, qscale);
		delta_load_rows(k, qkv, width, t, 1, d.kOff(h), dimK, 1.0f);
		for (int j = tid; j < dimV; j += nt) dov[j] = dout[(t * nHeadV + h) * dimV + j];
		__syncthreads();
		// pred = a·k̂ᵀS, δ = β(v − pred).
		for (int j = tid; j < dimV; j += nt) {
			float p = 0.0f;
			for (int i2 = 0; i2 < dimK; i2++) p += k[i2] * S[i2 * dimV + j];
			p *= a;
			pred[j] = p;
			delta[j] = b * (v[j] - p);
		}
		__syncthreads();
		// Row i2 of S_t = a·S + k̂δᵀ gives dq̂; dS (w.r.t. S_t) gains q̂·doᵀ.
		float dk1 = 0.0f;
		for (int i2 = tid; i2 < dimK; i2 += nt) {
			float dq = 0.0f, dk = 0.0f;
			for (int j = 0; j < dimV; j++) {
				float st = a * S[i2 * dimV + j] + k[i2] * delta[j];
				dq += st * dov[j];
				float ds = dS[i2 * dimV + j] + q[i2] * dov[j];
				dS[i2 * dimV + j] = ds;
				dk += ds * delta[j];
			}
			dqh[(t * nHeadV + h) * dimK + i2] = dq;
			dk1 = dk; // tid < dimK ≤ blockDim (Go checks): one row per thread
		}
		__syncthreads();
		// dδ = dSᵀk̂; dv = β·dδ; dβ = dδ·(v − pred); dpred = −β·dδ.
		float db = 0.0f;
		for (int j = tid; j < dimV; j += nt) {
			float dd = 0.0f;
			for (int i2 = 0; i2 < dimK; i2++) dd += k[i2] * dS[i2 * dimV + j];
			db += dd * (v[j] - pred[j]);
			dqkv[t * width + d.vOff(h) + j] = b * dd;
			ddelta[j] = -b * dd; // dpred
		}
		db = block_sum(db, scratch);
		if (tid == 0) dbeta[t * nHeadV + h] = db;
		__syncthreads();
		// dk̂ += (a·S)·dpred; dS' = dS + k̂·dpredᵀ; dg = ⟨dS', a·S⟩; dS ← a·dS'.
		float dga = 0.0f;
		for (int i2 = tid; i2 < dimK; i2 += nt) {
			float dk = dk1;
			for (int j = 0; j < dimV; j++) {
				float sp = a * S[i2 * dimV + j];
				dk += sp * ddelta[j];
				float dsp = dS[i2 * dimV + j] + k[i2] * ddelta[j];
				dga += dsp * sp;
				dS[i2 * dimV + j] = a * dsp;
			}
			dkh[(t * nHeadV + h) * dimK + i2] = dk;
		}
		dga = block_sum(dga, scratch);
		if (tid == 0) dg[t * nHeadV + h] = dga;
	}
	__syncthreads();
	// Runs may share an init slot: their gradients add.
	if (r.init >= 0) {
		float* dI = dState + ((long long)r.init * nHeadV + h) * hs;
		for (int e = tid; e < hs; e += nt) atomicAdd(&dI[e], dS[e]);
	}
}

// grid (nTok, nHeadK), block (128): dq̂ and dk̂ summed over the key head's
// value heads, through q̂ = q·r/sqrt(dimK) and k̂ = k·r with r =
// 1/sqrt(Σx² + 1e-6): dx = scale·(r·dxh − x·r³·(x·dxh)).
GRPO_KERNEL void __launch_bounds__(128) gated_delta_l2_backward_f32(float* dqkv, const float* dqh, const float* dkh, const float* qkv, int nHeadK,
								    int nHeadV, int dimK, int dimV) {
	GRPO_SHARED(float, scratch, [32]);
	DeltaDims d = {nHeadK, nHeadV, dimK, dimV};
	long long t = blockIdx.x, width = d.width();
	int kh = blockIdx.y, group = nHeadV / nHeadK;
	for (int which = 0; which < 2; which++) {
		const float* dxh = which == 0 ? dqh : dkh;
		long long off = t * width + (which == 0 ? kh : nHeadK + kh) * (long long)dimK;
		float scale = which == 0 ? rsqrtf((float)dimK) : 1.0f;
		float ss = 0.0f, dot = 0.0f;
		for (int i = threadIdx.x; i < dimK; i += blockDim.x) {
			float x = qkv[off + i], dy = 0.0f;
			for (int h = kh * group; h < (kh + 1) * group; h++) dy += dxh[(t * nHeadV + h) * dimK + i];
			ss += x * x;
			dot += x * dy;
		}
		ss = block_sum(ss, scratch);
		dot = block_sum(dot, scratch);
		float r = rsqrtf(ss + 1e-6f);
		for (int i = threadIdx.x; i < dimK; i += blockDim.x) {
			float x = qkv[off + i], dy = 0.0f;
			for (int h = kh * group; h < (kh + 1) * group; h++) dy += dxh[(t * nHeadV + h) * dimK + i];
			dqkv[off + i] = scale * (r * dy - x * r * r * r * dot);
		}
	}
}
