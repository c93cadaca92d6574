// ssd_scan.cu: the Mamba-2 state space scan (kernels.SSMOps.SSDScan) and
// its backward, token by token. A head's state rows evolve apart —
// S[p,:] ← a·S[p,:] + dt·x[p]·B — so a forward block owns one row p of
// one head of one run, and thread n its element S[p,n] in a register;
// only y (a sum over n) needs the block. The same kernel is the decode
// step (runs of one token): it allocates nothing and waits for nothing.
// A backward block walks all rows of its head in turn, so that the sums
// over rows (B's, C's and dt's gradients) have one writer each. Long
// runs take the chunked form (ssd_chunked.cu, ssd_chunked_backward.cu;
// ssm_ops.go chooses). CPU twin: kernels/cpu/ssm_scan.go.
// nvcc -ptx -arch=compute_90 ssd_scan.cu
#include "ssd.cuh"

// SSD_REPLAY tokens between the backward's saved states (ssdReplay in
// ssm_ops.go): it replays each stretch from its saved start into
// registers, hist[SSD_REPLAY] per thread. 16, not 32: at 32 ptxas spilled
// (255 registers, 224 bytes of stack on sm_90).
#define SSD_REPLAY 16
// SSD_UNROLL unrolls the replay loops, so hist[] lives in registers
// (nvcc); the emulator's host compiler takes the loops as they are.
#ifdef __CUDACC__
#define SSD_UNROLL _Pragma("unroll")
#else
#define SSD_UNROLL
#endif

// grid (nHeads·headDim, nRuns), block (stateSize rounded up to a warp, ≤
// 256): block (h·headDim + p, r), thread n. act: ssd.cuh's SSD_ACT_* bits
// (y, xBC).
__device__ __forceinline__ void ssd_scan(void* y, const void* xBC, const float* dtRaw, const float* aLog, const float* dtBias, const float* d,
					 float* state, const int* runs, int nTok, int slots, int nHeads, int headDim, int nGroups, int stateSize,
					 int act) {
	GRPO_SHARED(float, scratch, [32]);
	SSMDims m = {nHeads, headDim, nGroups, stateSize};
	int h = blockIdx.x / headDim, p = blockIdx.x % headDim, n = threadIdx.x, xb = act & SSD_ACT_XBC;
	LinearRun r;
	if (!linear_run(runs, blockIdx.y, nTok, slots, &r)) return;
	bool own = n < stateSize;
	long long at = ((long long)h * headDim + p) * stateSize + n, per = (long long)nHeads * m.headState();
	float s = own && r.init >= 0 ? state[r.init * per + at] : 0.0f;
	float A = -expf(aLog[h]), D = d[h], bias = dtBias[h];
	for (int i = 0; i < r.count; i++) {
		long long t = r.first + i, row = t * m.width();
		float sp, dt = ssm_dt(dtRaw[t * nHeads + h], bias, &sp), xp = ld_as(xBC, xb, row + (long long)h * headDim + p);
		float b = own ? ld_as(xBC, xb, row + m.bOff(h) + n) : 0.0f, c = own ? ld_as(xBC, xb, row + m.cOff(h) + n) : 0.0f;
		s = expf(dt * A) * s + dt * xp * b;
		float v = block_sum(s * c, scratch);
		if (n == 0) st_as(y, act & SSD_ACT_OUT, (t * nHeads + h) * headDim + p, v + D * xp);
	}
	// After the run read its init state: the final slot may be the same
	// (each thread reads and writes only its own element).
	if (own && r.fin >= 0) state[r.fin * per + at] = s;
}

GRPO_KERNEL void __launch_bounds__(256) ssd_scan_f32(float* y, const float* xBC, const float* dtRaw, const float* aLog, const float* dtBias,
						      const float* d, float* state, const int* runs, int nTok, int slots, int nHeads, int headDim,
						      int nGroups, int stateSize) {
	ssd_scan(y, xBC, dtRaw, aLog, dtBias, d, state, runs, nTok, slots, nHeads, headDim, nGroups, stateSize, 0);
}
// ssd_scan_as is ssd_scan_f32 over bf16 activations (act: SSD_ACT_OUT for
// y, SSD_ACT_XBC for xBC).
GRPO_KERNEL void __launch_bounds__(256) ssd_scan_as(void* y, const void* xBC, const float* dtRaw, const float* aLog, const float* dtBias,
						     const float* d, float* state, const int* runs, int nTok, int slots, int nHeads, int headDim,
						     int nGroups, int stateSize, int act) {
	ssd_scan(y, xBC, dtRaw, aLog, dtBias, d, state, runs, nTok, slots, nHeads, headDim, nGroups, stateSize, act);
}

// grid (nHeads, nRuns), block as ssd_scan_f32's: block (h, r) walks head
// h's state rows p one after another, thread n owning S[p,n] in a
// register. ck holds Σ⌈count/SSD_REPLAY⌉ × nHeads × headDim × stateSize
// saved states. It writes x's gradient and ddtRaw's (summed over the rows
// in row order) for the run's tokens, and into part (nTok × nHeads ×
// 2·stateSize) head h's share of B's and C's gradients (summed over the
// rows in row order; ssd_group_sum_f32 sums a group's heads); the
// gradient of the run's initial state replaces its first saved state,
// for ssd_init_sum_f32 to add into dState[init] (runs may share it). No
// atomics: one thread owns each sum, so the bits do not depend on the
// order blocks run in.
//
// Walking token t backwards with G the gradient of S after t:
//   G += dy[p]·C;  dC += dy[p]·S_t;  dx[p] = D·dy[p] + dt·Σ_n G·B;
//   dB += dt·G·x[p];  d dt = Σ_n G·(x[p]·B + A·a·S_{t−1});  G ← a·G.
//
// The second bound (3 blocks of 256 an SM: at most 85 registers) is for
// ptxas: with the loop over rows and no bound it gave the kernel 244
// registers (no spill, but 2 blocks of 128 threads an SM); with it, 78
// and no spill on sm_80 and sm_90 (ptx/ptxas-sm90.txt). A bound of 2
// spilled (128 registers, 368 bytes).
__device__ __forceinline__ void ssd_scan_backward(void* dxBC, float* ddtRaw, float* part, float* ck, const float* dState, const void* dy,
						  const void* xBC, const float* dtRaw, const float* aLog, const float* dtBias, const float* d,
						  const float* state, const int* runs, int nTok, int slots, int nHeads, int headDim, int nGroups,
						  int stateSize, int act) {
	GRPO_SHARED(float, scratch, [32]);
	SSMDims m = {nHeads, headDim, nGroups, stateSize};
	int h = blockIdx.x, n = threadIdx.x, N = stateSize, xb = act & SSD_ACT_XBC;
	LinearRun r;
	if (!linear_run(runs, blockIdx.y, nTok, slots, &r)) return;
	bool own = n < stateSize;
	long long per = (long long)nHeads * m.headState();
	float* saved = ck + ssd_runs_before(runs, blockIdx.y, SSD_REPLAY) * per;
	float A = -expf(aLog[h]), D = d[h], bias = dtBias[h];
	for (int p = 0; p < headDim; p++) {
		long long at = ((long long)h * headDim + p) * stateSize + n;
		// The forward again, saving the state before each stretch.
		float s = own && r.init >= 0 ? state[r.init * per + at] : 0.0f;
		for (int i = 0; i < r.count; i++) {
			if (i % SSD_REPLAY == 0 && own) saved[(i / SSD_REPLAY) * per + at] = s;
			long long t = r.first + i, row = t * m.width();
			float sp, dt = ssm_dt(dtRaw[t * nHeads + h], bias, &sp);
			s = expf(dt * A) * s + dt * ld_as(xBC, xb, row + (long long)h * headDim + p) * (own ? ld_as(xBC, xb, row + m.bOff(h) + n) : 0.0f);
		}
		float g = own && r.fin >= 0 ? dState[r.fin * per + at] : 0.0f;
		for (int c = (r.count - 1) / SSD_REPLAY; c >= 0; c--) {
			int len = min(SSD_REPLAY, r.count - c * SSD_REPLAY);
			float s0 = own ? saved[c * per + at] : 0.0f, hist[SSD_REPLAY];
			// hist[k]: the state after the stretch's token k (unrolled: registers).
			s = s0;
SSD_UNROLL
			for (int k = 0; k < SSD_REPLAY; k++) {
				if (k < len) {
					long long t = r.first + c * SSD_REPLAY + k, row = t * m.width();
					float sp, dt = ssm_dt(dtRaw[t * nHeads + h], bias, &sp);
					s = expf(dt * A) * s +
					    dt * ld_as(xBC, xb, row + (long long)h * headDim + p) * (own ? ld_as(xBC, xb, row + m.bOff(h) + n) : 0.0f);
				}
				hist[k] = s;
			}
SSD_UNROLL
			for (int k = SSD_REPLAY - 1; k >= 0; k--) {
				if (k >= len) continue; // len is the block's: barriers stay uniform
				long long t = r.first + c * SSD_REPLAY + k, row = t * m.width();
				float* prow = part + (t * nHeads + h) * 2 * N; // head h's dB | dC of token t
				float sp, dt = ssm_dt(dtRaw[t * nHeads + h], bias, &sp), a = expf(dt * A);
				float xp = ld_as(xBC, xb, row + (long long)h * headDim + p), dyp = ld_as(dy, act & SSD_ACT_DY, (t * nHeads + h) * headDim + p);
				float b = own ? ld_as(xBC, xb, row + m.bOff(h) + n) : 0.0f, cc = own ? ld_as(xBC, xb, row + m.cOff(h) + n) : 0.0f;
				float prev = k > 0 ? hist[k > 0 ? k - 1 : 0] : s0; // the index guard keeps k = 0's dead read in bounds
				g += dyp * cc;
				if (own) {
					// Row 0 starts the sums (part comes from the pool).
					prow[n] = (p > 0 ? prow[n] : 0.0f) + dt * g * xp;
					prow[N + n] = (p > 0 ? prow[N + n] : 0.0f) + dyp * hist[k];
				}
				float dxs = block_sum(g * b, scratch);
				float dd = block_sum(g * (xp * b + A * a * prev), scratch);
				if (n == 0) {
					st_as(dxBC, act & SSD_ACT_OUT, row + (long long)h * headDim + p, D * dyp + dt * dxs);
					float* ddt = &ddtRaw[t * nHeads + h];
					*ddt = (p > 0 ? *ddt : 0.0f) + dd * sp;
				}
				g *= a;
			}
		}
		// Stretch 0's start was this thread's last read of it.
		if (own && r.init >= 0) saved[at] = g;
	}
}

GRPO_KERNEL void __launch_bounds__(256, 3)
    ssd_scan_backward_f32(float* dxBC, float* ddtRaw, float* part, float* ck, const float* dState, const float* dy, const float* xBC,
			  const float* dtRaw, const float* aLog, const float* dtBias, const float* d, const float* state, const int* runs, int nTok,
			  int slots, int nHeads, int headDim, int nGroups, int stateSize) {
	ssd_scan_backward(dxBC, ddtRaw, part, ck, dState, dy, xBC, dtRaw, aLog, dtBias, d, state, runs, nTok, slots, nHeads, headDim, nGroups,
			  stateSize, 0);
}
// ssd_scan_backward_as is ssd_scan_backward_f32 over bf16 activations
// (act: SSD_ACT_OUT for dxBC's x columns, SSD_ACT_DY, SSD_ACT_XBC).
GRPO_KERNEL void __launch_bounds__(256, 3)
    ssd_scan_backward_as(void* dxBC, float* ddtRaw, float* part, float* ck, const float* dState, const void* dy, const void* xBC,
			 const float* dtRaw, const float* aLog, const float* dtBias, const float* d, const float* state, const int* runs, int nTok,
			 int slots, int nHeads, int headDim, int nGroups, int stateSize, int act) {
	ssd_scan_backward(dxBC, ddtRaw, part, ck, dState, dy, xBC, dtRaw, aLog, dtBias, d, state, runs, nTok, slots, nHeads, headDim, nGroups,
			  stateSize, act);
}
