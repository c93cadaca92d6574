// flash_tc.cuh: what the bf16 tensor-core flash attention kernels
// (attention_flash_tc.cu, attention_flash_tc_backward.cu) share: the
// mma.sync m16n8k16 and cp.async instructions, the shared-memory tile
// layout, and the loads of fragments from it.
//
// Unlike flash.cuh's wmma kernels, these hold scores, probabilities and
// outputs in mma's documented register layout (kernels/emu/mma.h spells it
// out): a warp's 16 × 8 accumulator tile gives lane l rows l/4 and l/4 + 8,
// columns 2·(l%4) and +1, so each lane knows which rows its values belong
// to. The online softmax rescales outputs in registers, and the
// probabilities of two adjacent 8-key accumulator tiles are, packed to
// bf16, exactly the A operand of the next mma (P·V, Pᵀ·dO, dS·K): scores
// never go through shared memory.
//
// Tiles in shared memory are bf16 rows of HD elements (the head dim padded
// with zeros to 64, 128 or 256) at a stride of FTC_LD(HD) = HD + 8: 16
// bytes of padding per row. Fragment loads read, per lane, row base + l/4
// at 32-bit word (l%4) (A operands and B operands of Q·Kᵀ-shaped products)
// or 16-bit element l/4 of rows 2·(l%4) and +1 (B operands of P·V-shaped
// products). With a stride of HD/2 + 4 words (HD/2 a multiple of 32) the
// first pattern puts lane l in bank 4·(l/4) + l%4 and the second in bank
// 8·(l%4) + (l/4)/2: all 32 banks distinct, or the same word, so no load
// conflicts; unpadded, the same loads would be 8-way and 4-way conflicts.
// Padding rather than an XOR swizzle because the fragments are read with
// plain 32- and 16-bit loads (no ldmatrix, which emu does not have), where
// padding makes every address a row·stride + column product and costs 3 to
// 12 % of the tile's bytes; the 16-byte cp.async writes stay 16-byte
// aligned and conflict-free too (each quarter-warp writes 128 contiguous
// or row-shifted bytes).
#pragma once
#include "common.cuh"
#include "paged.cuh"

#define FTC_WARPS 4
#define FTC_THREADS (32 * FTC_WARPS)
#define FTC_ROWS (16 * FTC_WARPS)  // query rows of a forward or dQ block; keys of a dK/dV block
#define FTC_LD(HD) ((HD) + 8)

// ftc_keys is the key tile of the forward and dQ passes and ftc_qrows the
// query tile of the dK/dV pass: 64, halved where the head dim is large so
// that the accumulators (HD/2 floats a lane for O or dQ, per 8 keys 4
// more for S and dP) fit in registers without spilling.
__host__ __device__ constexpr int ftc_keys(int hd) { return hd >= 256 ? 32 : 64; }
__host__ __device__ constexpr int ftc_qrows(int hd) { return hd >= 128 ? 32 : 64; }

// FTC_UNROLL unrolls a loop whose index picks registers (o[n][2·i]):
// left rolled, nvcc would move the whole accumulator array to local memory.
#ifdef GRPO_EMU
#define FTC_UNROLL
#else
#define FTC_UNROLL _Pragma("unroll")
#endif

#ifdef GRPO_EMU
__device__ __forceinline__ void mma_bf16(float d[4], const unsigned a[4], const unsigned b[2]) { emu_mma_m16n8k16_bf16(d, a, b); }
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
	if (valid) GRPO_COUNT_READ(16);
	emu_cp_async16(dst, src, valid);
}
__device__ __forceinline__ void cp_async_commit() { emu_cp_async_commit(); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
	emu_cp_async_wait(N);
}
#else
// d += a·b: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 (sm_80+).
__device__ __forceinline__ void mma_bf16(float d[4], const unsigned a[4], const unsigned b[2]) {
	asm volatile(
	    "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
	    "{%0,%1,%2,%3};\n"
	    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
	    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// cp_async16 copies 16 bytes from global src to shared dst without
// passing through registers (cp.async.cg: bypassing L1), or writes 16
// zero bytes when valid is false (src-size 0: src is not read).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
	unsigned s = (unsigned)__cvta_generic_to_shared(dst);
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
	asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
#endif

// pack_bf16 rounds two f32 values to bf16 (nearest even) into one
// register, lo in the lower half, as mma's operands hold them.
__device__ __forceinline__ unsigned pack_bf16(float lo, float hi) {
	__nv_bfloat16 l = __float2bfloat16_rn(lo), h = __float2bfloat16_rn(hi);
	return (unsigned)*(unsigned short*)&l | (unsigned)*(unsigned short*)&h << 16;
}
__device__ __forceinline__ unsigned ld32(const __nv_bfloat16* p) { return *(const unsigned*)p; }
__device__ __forceinline__ unsigned ld16x2(const __nv_bfloat16* lo, const __nv_bfloat16* hi) {
	return (unsigned)*(const unsigned short*)lo | (unsigned)*(const unsigned short*)hi << 16;
}

// frag_a loads the A operand of rows 0..15 and columns k0..k0+15 of a
// row-major tile with stride ld (a tile's rows as the product's rows).
__device__ __forceinline__ void frag_a(unsigned a[4], const __nv_bfloat16* t, int ld, int k0) {
	int lane = threadIdx.x % 32, g = lane / 4, c = k0 + 2 * (lane % 4);
	a[0] = ld32(t + g * ld + c);
	a[1] = ld32(t + (g + 8) * ld + c);
	a[2] = ld32(t + g * ld + c + 8);
	a[3] = ld32(t + (g + 8) * ld + c + 8);
}
// frag_bt loads the B operand (k × n = 16 × 8) whose element (k, n) is
// t[n·ld + k0 + k]: rows n0..n0+7 of a row-major tile, transposed (Kᵀ in
// Q·Kᵀ).
__device__ __forceinline__ void frag_bt(unsigned b[2], const __nv_bfloat16* t, int ld, int n0, int k0) {
	int lane = threadIdx.x % 32;
	const __nv_bfloat16* p = t + (n0 + lane / 4) * ld + k0 + 2 * (lane % 4);
	b[0] = ld32(p);
	b[1] = ld32(p + 8);
}
// frag_b loads the B operand whose element (k, n) is t[(k0 + k)·ld + n0 +
// n]: rows k0..k0+15 of a row-major tile as they are (V in P·V).
__device__ __forceinline__ void frag_b(unsigned b[2], const __nv_bfloat16* t, int ld, int k0, int n0) {
	int lane = threadIdx.x % 32;
	const __nv_bfloat16* p = t + (k0 + 2 * (lane % 4)) * ld + n0 + lane / 4;
	b[0] = ld16x2(p, p + ld);
	b[1] = ld16x2(p + 8 * ld, p + 9 * ld);
}
// frag_a_from packs the f32 accumulators of two adjacent 16 × 8 tiles
// (columns 16j..16j+7 and 16j+8..16j+15) into the A operand of columns
// 16j..16j+15: the layouts line up, so nothing moves between lanes.
__device__ __forceinline__ void frag_a_from(unsigned a[4], const float lo[4], const float hi[4]) {
	a[0] = pack_bf16(lo[0], lo[1]);
	a[1] = pack_bf16(lo[2], lo[3]);
	a[2] = pack_bf16(hi[0], hi[1]);
	a[3] = pack_bf16(hi[2], hi[3]);
}

// ftc_load_kv issues the cp.async copies of n rows (keys) of sequence s
// from j0 on, KV head g, into tile (stride FTC_LD(HD)): zeros for dims ≥
// headDim and positions outside first..last, which are never read (cache
// rows there may hold garbage and their table entries may be unset).
// headDim is a multiple of 8, so each 16-byte chunk is whole.
template <int HD>
__device__ __forceinline__ void ftc_load_kv(__nv_bfloat16* tile, int n, const __nv_bfloat16* cache, const int* table,
					    int blockSize, int maxBlocks, int s, int j0, int first, int last, int g,
					    int headDim, int width) {
	for (int i = threadIdx.x; i < n * (HD / 8); i += blockDim.x) {
		int c = i / (HD / 8), d = i % (HD / 8) * 8, p = j0 + c;
		bool valid = p >= first && p <= last && d < headDim;
		const __nv_bfloat16* src = cache;
		if (valid) src = cache + kv_row(table, s, p, blockSize, maxBlocks) * width + (long long)g * headDim + d;
		cp_async16(tile + c * FTC_LD(HD) + d, src, valid);
	}
}

// ftc_load_rows issues the cp.async copies of n (token, query head) rows
// r0.. of x (nTok × nHead × headDim bf16; row R is token R / group, head
// g·group + R % group), zeros for dims ≥ headDim and rows ≥ nRows.
template <int HD>
__device__ __forceinline__ void ftc_load_rows(__nv_bfloat16* tile, int n, const __nv_bfloat16* x, int r0, int nRows,
					      int group, int g, int nHead, int headDim) {
	for (int i = threadIdx.x; i < n * (HD / 8); i += blockDim.x) {
		int r = i / (HD / 8), d = i % (HD / 8) * 8, R = r0 + r;
		bool valid = R < nRows && d < headDim;
		const __nv_bfloat16* src = x;
		if (valid) src = x + ((long long)(R / group) * nHead + (long long)g * group + R % group) * headDim + d;
		cp_async16(tile + r * FTC_LD(HD) + d, src, valid);
	}
}

// ftc_row_offset is the element offset of row R's (token, head) in an
// nTok × nHead × headDim tensor, and ftc_lse_index its index in nTok ×
// nHead.
__device__ __forceinline__ long long ftc_row_offset(int R, int group, int g, int nHead, int headDim) {
	return ((long long)(R / group) * nHead + (long long)g * group + R % group) * headDim;
}
__device__ __forceinline__ long long ftc_lse_index(int R, int group, int g, int nHead) {
	return (long long)(R / group) * nHead + (long long)g * group + R % group;
}
