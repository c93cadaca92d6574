// demo_mma.cuh: kernels that test emu's mma.sync m16n8k16 and cp.async
// emulation (mma.h) through the wrappers the tensor-core attention kernels
// call (kernels/cuda/flash_tc.cuh; mma_test.go). Only emu runs them: the
// cp.async kernel reads a destination before waiting for it, which a GPU
// leaves undefined.
#pragma once
#include "../cuda/flash_tc.cuh"

// demo_mma_16x8x16 (one warp): d (16 × 8 f32, row-major) = a (16 × 16
// bf16, row-major) · b (16 × 8 bf16, k × n row-major) + c, each lane
// gathering its registers by the PTX ISA's fragment layout with plain
// loads from global memory.
GRPO_KERNEL void __launch_bounds__(32) demo_mma_16x8x16(float* d, const __nv_bfloat16* a, const __nv_bfloat16* b,
							 const float* c) {
	int lane = threadIdx.x, g = lane / 4, t = lane % 4;
	unsigned ra[4], rb[2];
	for (int i = 0; i < 4; i++) {
		int row = g + 8 * (i % 2), col = 2 * t + 8 * (i / 2);
		ra[i] = ld16x2(a + row * 16 + col, a + row * 16 + col + 1);
	}
	for (int i = 0; i < 2; i++) {
		int k = 2 * t + 8 * i;
		rb[i] = ld16x2(b + k * 8 + g, b + (k + 1) * 8 + g);
	}
	float acc[4];
	for (int i = 0; i < 4; i++) acc[i] = c[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2];
	mma_bf16(acc, ra, rb);
	for (int i = 0; i < 4; i++) d[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = acc[i];
}

// demo_cp_async (one warp, 3 × 512 bytes of dynamic shared memory): each
// lane copies its 16-byte chunk of src0 into region 0 (group 1) and of
// src1 into region 1 (group 2), and zero-fills its chunk of region 2
// (valid false, still group 2). It records region 0 before any wait
// (out[0..127]), after wait_group 1 (out[128..255]: group 1 landed), and
// regions 1 and 2 after that wait and after wait_group 0 (out[256..767]);
// out holds floats, 4 a lane per record.
GRPO_KERNEL void __launch_bounds__(32) demo_cp_async(float* out, const float* src0, const float* src1) {
	GRPO_DYNAMIC_SHARED(float, s);
	int lane = threadIdx.x;
	cp_async16(s + 4 * lane, src0 + 4 * lane, true);
	cp_async_commit();
	cp_async16(s + 128 + 4 * lane, src1 + 4 * lane, true);
	cp_async16(s + 256 + 4 * lane, src1 + 4 * lane, false);
	cp_async_commit();
	for (int i = 0; i < 4; i++) out[4 * lane + i] = s[4 * lane + i];
	cp_async_wait<1>();
	for (int i = 0; i < 4; i++) out[128 + 4 * lane + i] = s[4 * lane + i];
	for (int i = 0; i < 4; i++) out[256 + 4 * lane + i] = s[128 + 4 * lane + i];
	cp_async_wait<0>();
	for (int i = 0; i < 4; i++) out[384 + 4 * lane + i] = s[128 + 4 * lane + i];
	for (int i = 0; i < 4; i++) out[512 + 4 * lane + i] = s[256 + 4 * lane + i];
}
