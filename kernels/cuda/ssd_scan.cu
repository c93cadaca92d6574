// ssd_scan.cu: the Mamba-2 state space scan (kernels.SSMOps.SSDScan) and
// its backward, token by token. A head's state rows evolve apart —
// S[p,:] ← a·S[p,:] + dt·x[p]·B — so one block owns one row p of one
// head of one run, and thread n its element S[p,n] in a register; only
// y (a sum over n) needs the block. The same kernel is the decode step
// (runs of one token): it allocates nothing and waits for nothing. The
// chunked SSD form is not here yet. CPU twin: kernels/cpu/ssm_scan.go.
// nvcc -ptx -arch=compute_90 ssd_scan.cu
#include "linear.cuh"

// SSD_CHUNK tokens between the backward's saved states (SSD_CHUNK in
// ssm_ops.go): it replays each chunk from its saved start into registers.
#define SSD_CHUNK 32
// SSD_UNROLL unrolls the chunk loops, so hist[] lives in registers
// (nvcc); the emulator's host compiler takes the loops as they are.
#ifdef __CUDACC__
#define SSD_UNROLL _Pragma("unroll")
#else
#define SSD_UNROLL
#endif

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

// grid (nHeads·headDim, nRuns), block (stateSize rounded up to a warp, ≤
// 256): block (h·headDim + p, r), thread n.
GRPO_KERNEL void __launch_bounds__(256) ssd_scan_f32(float* y, const float* xBC, const float* dtRaw, const float* aLog, const float* dtBias,
						      const float* d, float* state, const int* runs, int nTok, int slots, int nHeads, int headDim,
						      int nGroups, int stateSize) {
	GRPO_SHARED(float, scratch, [32]);
	SSMDims m = {nHeads, headDim, nGroups, stateSize};
	int h = blockIdx.x / headDim, p = blockIdx.x % headDim, n = threadIdx.x;
	LinearRun r;
	if (!linear_run(runs, blockIdx.y, nTok, slots, &r)) return;
	bool own = n < stateSize;
	long long at = ((long long)h * headDim + p) * stateSize + n, per = (long long)nHeads * m.headState();
	float s = own && r.init >= 0 ? state[r.init * per + at] : 0.0f;
	float A = -expf(aLog[h]), D = d[h], bias = dtBias[h];
	for (int i = 0; i < r.count; i++) {
		long long t = r.first + i;
		const float* row = xBC + t * m.width();
		float sp, dt = ssm_dt(dtRaw[t * nHeads + h], bias, &sp), xp = row[(long long)h * headDim + p];
		float b = own ? row[m.bOff(h) + n] : 0.0f, c = own ? row[m.cOff(h) + n] : 0.0f;
		s = expf(dt * A) * s + dt * xp * b;
		float v = block_sum(s * c, scratch);
		if (n == 0) y[(t * nHeads + h) * headDim + p] = v + D * xp;
	}
	// After the run read its init state: the final slot may be the same
	// (each thread reads and writes only its own element).
	if (own && r.fin >= 0) state[r.fin * per + at] = s;
}

// ssd_chunk_offset is the first saved state of run r: the runs before it
// take ⌈count/SSD_CHUNK⌉ each.
__device__ __forceinline__ long long ssd_chunk_offset(const int* runs, int r) {
	long long off = 0;
	for (int i = 0; i < r; i++) off += (runs[4 * i + 1] + SSD_CHUNK - 1) / SSD_CHUNK;
	return off;
}

// grid and block as ssd_scan_f32's. ck holds Σ⌈count/SSD_CHUNK⌉ ×
// nHeads × headDim × stateSize saved states. dxBC and ddtRaw are zero on
// entry: B's and C's gradients (summed over rows and heads), ddtRaw's
// (summed over rows) and dState[init] (runs may share it) are added
// atomically; x's is written.
//
// Walking token t backwards with G the gradient of S after t:
//   G += dy[p]·C;  dC += dy[p]·S_t;  dx[p] = D·dy[p] + dt·Σ_n G·B;
//   dB += dt·G·x[p];  d dt = Σ_n G·(x[p]·B + A·a·S_{t−1});  G ← a·G.
GRPO_KERNEL void __launch_bounds__(256)
    ssd_scan_backward_f32(float* dxBC, float* ddtRaw, float* dState, float* ck, const float* dy, const float* xBC, const float* dtRaw,
			  const float* aLog, const float* dtBias, const float* d, const float* state, const int* runs, int nTok, int slots,
			  int nHeads, int headDim, int nGroups, int stateSize) {
	GRPO_SHARED(float, scratch, [32]);
	SSMDims m = {nHeads, headDim, nGroups, stateSize};
	int h = blockIdx.x / headDim, p = blockIdx.x % headDim, n = threadIdx.x;
	LinearRun r;
	if (!linear_run(runs, blockIdx.y, nTok, slots, &r)) return;
	bool own = n < stateSize;
	long long at = ((long long)h * headDim + p) * stateSize + n, per = (long long)nHeads * m.headState();
	float* saved = ck + ssd_chunk_offset(runs, blockIdx.y) * per;
	float A = -expf(aLog[h]), D = d[h], bias = dtBias[h];
	// The forward again, saving the state before each chunk.
	float s = own && r.init >= 0 ? state[r.init * per + at] : 0.0f;
	for (int i = 0; i < r.count; i++) {
		if (i % SSD_CHUNK == 0 && own) saved[(i / SSD_CHUNK) * per + at] = s;
		long long t = r.first + i;
		const float* row = xBC + t * m.width();
		float sp, dt = ssm_dt(dtRaw[t * nHeads + h], bias, &sp);
		s = expf(dt * A) * s + dt * row[(long long)h * headDim + p] * (own ? row[m.bOff(h) + n] : 0.0f);
	}
	float g = own && r.fin >= 0 ? dState[r.fin * per + at] : 0.0f;
	for (int c = (r.count - 1) / SSD_CHUNK; c >= 0; c--) {
		int len = min(SSD_CHUNK, r.count - c * SSD_CHUNK);
		float s0 = own ? saved[c * per + at] : 0.0f, hist[SSD_CHUNK];
		// hist[k]: the state after the chunk's token k (unrolled: registers).
		s = s0;
SSD_UNROLL
		for (int k = 0; k < SSD_CHUNK; k++) {
			if (k < len) {
				long long t = r.first + c * SSD_CHUNK + k;
				const float* row = xBC + t * m.width();
				float sp, dt = ssm_dt(dtRaw[t * nHeads + h], bias, &sp);
				s = expf(dt * A) * s + dt * row[(long long)h * headDim + p] * (own ? row[m.bOff(h) + n] : 0.0f);
			}
			hist[k] = s;
		}
SSD_UNROLL
		for (int k = SSD_CHUNK - 1; k >= 0; k--) {
			if (k >= len) continue; // len is the block's: barriers stay uniform
			long long t = r.first + c * SSD_CHUNK + k;
			const float* row = xBC + t * m.width();
			float* drow = dxBC + t * m.width();
			float sp, dt = ssm_dt(dtRaw[t * nHeads + h], bias, &sp), a = expf(dt * A);
			float xp = row[(long long)h * headDim + p], dyp = dy[(t * nHeads + h) * headDim + p];
			float b = own ? row[m.bOff(h) + n] : 0.0f, cc = own ? row[m.cOff(h) + n] : 0.0f;
			float prev = k > 0 ? hist[k > 0 ? k - 1 : 0] : s0; // the index guard keeps k = 0's dead read in bounds
			g += dyp * cc;
			if (own) {
				atomicAdd(&drow[m.cOff(h) + n], dyp * hist[k]);
				atomicAdd(&drow[m.bOff(h) + n], dt * g * xp);
			}
			float dxs = block_sum(g * b, scratch);
			float dd = block_sum(g * (xp * b + A * a * prev), scratch);
			if (n == 0) {
				drow[(long long)h * headDim + p] = D * dyp + dt * dxs;
				atomicAdd(&ddtRaw[t * nHeads + h], dd * sp);
			}
			g *= a;
		}
	}
	if (own && r.init >= 0) atomicAdd(&dState[r.init * per + at], g);
}
