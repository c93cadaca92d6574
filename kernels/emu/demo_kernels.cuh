// demo_kernels.cuh: CUDA kernels that test the emulator (not the model).
// They are valid CUDA; only emu runs them.
#pragma once
#include "../cuda/common.cuh"

// Tree reduction in shared memory: out[blockIdx] = Σ in[block's elements].
// blockDim.x must be a power of two ≤ 1024.
GRPO_KERNEL void demo_block_sum(float* out, const float* in, int n) {
	GRPO_SHARED(float, s, [1024]);
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	s[threadIdx.x] = i < n ? in[i] : 0.0f;
	__syncthreads();
	for (int w = blockDim.x / 2; w > 0; w >>= 1) {
		if ((int)threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

// The same reduction with the barrier after the loads missing: thread 0
// may add s[w] before thread w stored it. On a GPU this is a race that
// usually goes unnoticed; under emu it always gives a wrong sum.
GRPO_KERNEL void demo_block_sum_missing_sync(float* out, const float* in, int n) {
	GRPO_DYNAMIC_SHARED(float, s);
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	s[threadIdx.x] = i < n ? in[i] : 0.0f;
	for (int w = blockDim.x / 2; w > 0; w >>= 1) {
		if ((int)threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

// Sum of a block's elements through warp shuffles and a 32-float scratch.
GRPO_KERNEL void demo_warp_block_sum(float* out, const float* in, int n) {
	GRPO_SHARED(float, scratch, [32]);
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float v = block_sum(i < n ? in[i] : 0.0f, scratch);
	if (threadIdx.x == 0) out[blockIdx.x] = v;
}

// Per thread (one 64-thread block), 6 ints: shfl_xor(lane, 1), shfl_down(
// lane, 3), shfl_up(lane, 2), shfl(lane, 7) with width 16, ballot of odd
// lanes, and a __syncwarp-ordered read of the neighbour's shared slot.
GRPO_KERNEL void demo_shuffles(int* out) {
	GRPO_SHARED(int, slot, [64]);
	int t = threadIdx.x, lane = t & 31;
	int* o = out + t * 6;
	o[0] = __shfl_xor_sync(GRPO_FULL_MASK, lane, 1);
	o[1] = __shfl_down_sync(GRPO_FULL_MASK, lane, 3);
	o[2] = __shfl_up_sync(GRPO_FULL_MASK, lane, 2);
	o[3] = __shfl_sync(GRPO_FULL_MASK, lane, 7, 16);
	o[4] = (int)__ballot_sync(GRPO_FULL_MASK, lane & 1);
	slot[t] = 100 + t;
	__syncwarp();
	o[5] = slot[(t & ~31) | ((lane + 1) & 31)];
}

// Every thread of every block adds 1: out[0] = total threads; out[1] gets
// the max block index.
GRPO_KERNEL void demo_atomic_count(int* out) {
	atomicAdd(&out[0], 1);
	atomicMax(&out[1], (int)blockIdx.x);
}

// Thread 0 of each block takes the next arrival number from out[0]:
// out[1 + block] is the block's place in the order blocks started.
GRPO_KERNEL void demo_arrival_order(int* out) {
	if (threadIdx.x == 0) out[1 + blockIdx.x] = atomicAdd(&out[0], 1);
}

// Threads below half wait at a barrier the others never reach: a GPU hangs
// or misbehaves; emu reports it.
GRPO_KERNEL void demo_divergent_barrier(int* out) {
	if (threadIdx.x < blockDim.x / 2) __syncthreads();
	out[threadIdx.x] = 1;
}

// Each block reads its static shared slot before writing it, then writes
// its own index there: out[block] is what a block found. Under emu every
// block must find the fill pattern (0xFFFFFFFF), never an earlier block's
// index or zero.
GRPO_KERNEL void demo_static_shared_first_read(int* out) {
	GRPO_SHARED(int, slot, );
	if (threadIdx.x == 0) {
		out[blockIdx.x] = slot;
		slot = (int)blockIdx.x;
	}
}

// expf, logf and rsqrtf of in[i], as the kernels call them:
// out[3i], out[3i+1], out[3i+2].
GRPO_KERNEL void demo_math(float* out, const float* in, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		out[3 * i] = expf(in[i]);
		out[3 * i + 1] = logf(in[i]);
		out[3 * i + 2] = rsqrtf(in[i]);
	}
}
