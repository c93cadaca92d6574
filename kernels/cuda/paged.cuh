// paged.cuh: what both flash attention families (flash.cuh's wmma
// kernels, flash_tc.cuh's mma.sync ones) know of the paged KV cache
// beyond its addressing: the keys a query's window reaches, and the
// block-table entries that map a cache block, which the dK/dV passes
// (a block of threads per cache block) walk.
#pragma once
#include "common.cuh"

// attn_first is the first key position a query at position p attends
// to: p − window + 1 under a sliding window (window > 0), else 0
// (kernels.AttentionVariant).
__device__ __forceinline__ int attn_first(int p, int window) { return window > 0 ? max(0, p - window + 1) : 0; }

// paged_next_entry is the first table entry from entry on (of the n =
// seqs · maxBlocks) that maps cache block blk, n when none is left: the
// dK/dV passes walk them in table order, which fixes the order in which
// a block shared by several sequences gets their gradients. Every thread
// of the block calls it; thread 0 scans the table into ctl[0]. The
// leading barrier lets the caller reuse ctl and the tiles of the
// previous mapping.
__device__ __forceinline__ int paged_next_entry(const int* table, int entry, int n, int blk, int* ctl) {
	__syncthreads();  // ctl and the tiles of the previous mapping are no longer read
	if (threadIdx.x == 0) {
		int e = entry;
		while (e < n && table[e] != blk) e++;
		ctl[0] = e;
	}
	__syncthreads();
	return ctl[0];
}

// paged_entry_reach: table entry (s, j) maps a dK/dV block's cache rows
// row0..row0+nk-1, positions j0.. of sequence s. It counts only if a
// query of s (of the nTok tokens' seq and pos) reaches one of them (an
// entry past a sequence's end may hold anything): then the queries reach
// keys first..last of them (last ≤ j0 + nk − 1). Every thread of the
// block calls it (block-wide maxima over scratch, 32 floats) and gets the
// same answer.
__device__ __forceinline__ bool paged_entry_reach(int entry, const int* seq, const int* pos, int maxBlocks,
						  int blockSize, int nTok, int row0, int nk, int window, float* scratch,
						  int& s, int& j0, int& first, int& last) {
	s = entry / maxBlocks;
	j0 = entry % maxBlocks * blockSize + row0;
	last = -1;
	first = -(1 << 24);  // positions are below 2²⁴, exact as float; first negated
	for (int t = threadIdx.x; t < nTok; t += blockDim.x)
		if (seq[t] == s) {
			last = max(last, pos[t]);
			first = max(first, -attn_first(pos[t], window));
		}
	last = (int)block_max((float)last, scratch);
	first = -(int)block_max((float)first, scratch);
	if (last < j0 || first > j0 + nk - 1) return false;  // uniform: no window reaches the block
	last = min(last, j0 + nk - 1);
	return true;
}
