// ssd_backward_sums.cu: the last steps of the Mamba-2 scan's backward
// (kernels.SSMOps.SSDScanBackward), after ssd_scan_backward_f32 or
// ssd_chunked_backward_f32: the gradients those leave per head and per
// run, summed in a fixed order so that a backward gives the same bits run
// after run (atomics would add in arrival order). B's and C's gradients
// sum over a group's heads in head order; an init slot's state gradient
// over the runs that share it, in run order. Their CPU twin is the end of
// kernels/cpu/ssm_scan.go's SSDScanBackward (a (run, group) task's heads,
// then dInit in run order).
// nvcc -ptx -arch=compute_90 ssd_backward_sums.cu
#include "ssd.cuh"

// grid (nTok), block (256): token t's B and C gradients, each the sum
// over its group's heads of part (nTok × nHeads × 2·stateSize: a head's dB
// then dC) in head order. A token no well-formed run covers has no
// partials: its dxBC row and ddtRaw row are zeroed instead (the backward
// writes every other x column and ddt). act: SSD_ACT_OUT if dxBC is
// bf16 (each sum rounded once, at its store).
__device__ __forceinline__ void ssd_group_sum(void* dxBC, float* ddtRaw, const float* part, const int* runs, int nRuns, int nTok, int slots,
					      int nHeads, int headDim, int nGroups, int stateSize, int act) {
	GRPO_SHARED(int, covered, [1]);
	SSMDims m = {nHeads, headDim, nGroups, stateSize};
	long long t = blockIdx.x, width = m.width();
	int tid = threadIdx.x, nt = blockDim.x, N = stateSize, GN = nGroups * N, hpg = nHeads / nGroups;
	if (tid == 0) covered[0] = 0;
	__syncthreads();
	for (int i = tid; i < nRuns; i += nt) {
		LinearRun r;
		if (linear_run(runs, i, nTok, slots, &r) && r.first <= t && t < r.first + r.count) covered[0] = 1; // every writer writes 1
	}
	__syncthreads();
	int ob = act & SSD_ACT_OUT;
	if (!covered[0]) {
		for (long long j = tid; j < width; j += nt) st_as(dxBC, ob, t * width + j, 0.0f);
		for (int h = tid; h < nHeads; h += nt) ddtRaw[t * nHeads + h] = 0.0f;
		return;
	}
	// Column e of the B | C columns is group e % GN / N's element e % N,
	// of B below GN and of C from there: head h's partial is at
	// part[(t·nHeads + h)·2N + (e < GN ? 0 : N) + e % N].
	for (int e = tid; e < 2 * GN; e += nt) {
		const float* src = part + (t * nHeads + e % GN / N * hpg) * 2 * N + (e < GN ? 0 : N) + e % N;
		float acc = 0.0f;
		for (int i = 0; i < hpg; i++) acc += src[(long long)i * 2 * N];
		st_as(dxBC, ob, t * width + (long long)nHeads * headDim + e, acc);
	}
}

GRPO_KERNEL void __launch_bounds__(256) ssd_group_sum_f32(float* dxBC, float* ddtRaw, const float* part, const int* runs, int nRuns, int nTok,
							   int slots, int nHeads, int headDim, int nGroups, int stateSize) {
	ssd_group_sum(dxBC, ddtRaw, part, runs, nRuns, nTok, slots, nHeads, headDim, nGroups, stateSize, 0);
}
// ssd_group_sum_as is ssd_group_sum_f32 into a bf16 dxBC (act:
// SSD_ACT_OUT).
GRPO_KERNEL void __launch_bounds__(256) ssd_group_sum_as(void* dxBC, float* ddtRaw, const float* part, const int* runs, int nRuns, int nTok,
							  int slots, int nHeads, int headDim, int nGroups, int stateSize, int act) {
	ssd_group_sum(dxBC, ddtRaw, part, runs, nRuns, nTok, slots, nHeads, headDim, nGroups, stateSize, act);
}

// grid (≤ ⌈per/256⌉), block (256), striding over the per = nHeads ×
// headDim × stateSize elements of a slot: each thread adds, for every
// well-formed run with an init slot in run order, the run's initial-state
// gradient — which the backward left in its first saved state in ck, at
// ssd_runs_before(runs, r, every) states (every: SSD_REPLAY or
// SSD_CHUNK) — into dState[init]. One thread owns an element of every
// slot, so runs sharing a slot add in run order, after the backward read
// every final slot's gradient.
GRPO_KERNEL void __launch_bounds__(256) ssd_init_sum_f32(float* dState, const float* ck, const int* runs, int nRuns, int nTok, int slots,
							  int per, int every) {
	for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < per; e += (long long)gridDim.x * blockDim.x) {
		long long off = 0;
		for (int i = 0; i < nRuns; i++) {
			LinearRun r;
			if (linear_run(runs, i, nTok, slots, &r) && r.init >= 0) dState[r.init * (long long)per + e] += ck[off * per + e];
			off += (runs[4 * i + 1] + every - 1) / every;
		}
	}
}
