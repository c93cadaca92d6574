// mma.h: the two PTX instructions the tensor-core flash attention kernels
// (kernels/cuda/flash_tc.cuh) issue as inline assembly on a GPU, for
// kernels compiled under emu; shim.h includes it.
//
// emu_mma_m16n8k16_bf16 is mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// with its fragment layout as the PTX ISA documents it ("Matrix Fragments
// for mma.m16n8k16 with floating point type"), unlike wmma.h, whose layout
// is the emulator's own: the kernels build the P operand from the score
// accumulators in registers, which relies on the documented layout. With
// g = lane / 4 and t = lane % 4, and each 32-bit register two bf16 (the
// lower half the element with the lower column or k index):
//   A (16 × 16, row-major): a[0] row g, cols 2t, 2t+1; a[1] row g+8, same
//       cols; a[2] row g, cols 2t+8, 2t+9; a[3] row g+8, cols 2t+8, 2t+9.
//   B (16 × 8, k × n):      b[0] k 2t, 2t+1, col g; b[1] k 2t+8, 2t+9, col g.
//   C, D (16 × 8, f32):     d[0], d[1] row g, cols 2t, 2t+1; d[2], d[3] row
//       g+8, same cols.
// It is collective over the warp as on a GPU (all 32 lanes, or a trap);
// each d element is c + Σ_k a·b with f32 sums in k order, each bf16
// product exact (as wmma.h; tensor cores sum in truncating groups).
//
// emu_cp_async16, emu_cp_async_commit and emu_cp_async_wait are cp.async's
// 16-byte copy from global to shared memory, commit_group and wait_group:
// the source is read at issue, but the destination is written only when a
// wait_group completes the copy's group, so a kernel that reads a tile
// before waiting for it reads the previous contents (dynamic shared memory
// starts as NaN) and fails its conformance test instead of passing by the
// emulator's luck. A copy with valid false writes 16 zero bytes (the
// src-size 0 form). Copies not yet committed are not completed by a wait,
// as on a GPU.
#pragma once

namespace emu {
void cp_async16(void* dst, const void* src, bool valid);
void cp_async_commit();
void cp_async_wait(int pending);
}  // namespace emu

inline void emu_cp_async16(void* dst, const void* src, bool valid) { ::emu::cp_async16(dst, src, valid); }
inline void emu_cp_async_commit() { ::emu::cp_async_commit(); }
inline void emu_cp_async_wait(int pending) { ::emu::cp_async_wait(pending); }

namespace emu {
namespace mma_detail {
inline float bf16_half(unsigned reg, int hi) { return __uint_as_float(hi ? reg & 0xffff0000u : reg << 16); }
}  // namespace mma_detail
}  // namespace emu

// d = a·b + d over one warp (see above).
inline void emu_mma_m16n8k16_bf16(float d[4], const unsigned a[4], const unsigned b[2]) {
	using ::emu::mma_detail::bf16_half;
	if (::emu::warp_lanes() != 32) ::emu::trap("mma: a warp with fewer than 32 threads");
	const uint64_t tag = 0x4d4d413136383136ull;
	uint64_t mine[3] = {tag, (uint64_t)(uintptr_t)a, (uint64_t)(uintptr_t)b};
	uint64_t all[3 * 32];
	::emu::warp_gather(0xffffffffu, mine, 3, all);
	for (int l = 0; l < 32; l++)
		if (all[3 * l] != tag) ::emu::trap("mma: the lanes of a warp are not all at the same mma call (a divergent branch?)");
	int lane = ::emu::lane_id(), g = lane / 4, t = lane % 4;
	// This lane's rows of A (g, g + 8) and columns of B (2t, 2t + 1),
	// unpacked once: A(row, k) is in lane (row % 8)·4 + (k % 8)/2,
	// register row/8 + 2·(k/8); B(k, col) in lane col·4 + (k % 8)/2,
	// register k/8; each register's lower half the even k.
	float ar[2][16], bc[2][16];
	for (int k = 0; k < 16; k++)
		for (int h = 0; h < 2; h++) {
			const uint32_t* a_lane = (const unsigned*)(uintptr_t)all[3 * (g * 4 + (k % 8) / 2) + 1];
			const uint32_t* b_lane = (const unsigned*)(uintptr_t)all[3 * ((2 * t + h) * 4 + (k % 8) / 2) + 2];
			ar[h][k] = bf16_half(a_lane[h + 2 * (k / 8)], k % 2);
			bc[h][k] = bf16_half(b_lane[k / 8], k % 2);
		}
	float out[4];
	for (int i = 0; i < 4; i++) {
		const float *x = ar[i / 2], *y = bc[i % 2];
		float s = d[i];
		// A product of two bf16 values is exact in f32, so s + x·y rounds
		// once, as an fmaf would (and as a contraction into one may).
		for (int k = 0; k < 16; k++) s += x[k] * y[k];
		out[i] = s;
	}
	::emu::syncwarp(0xffffffffu);  // no lane changes a or b while another reads them
	for (int i = 0; i < 4; i++) d[i] = out[i];
}
