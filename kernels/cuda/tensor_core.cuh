// tensor_core.cuh: one 64 × 64 tile of C = A·B on tensor cores (wmma
// m16n16k16, bf16 operands, f32 accumulation), for the kernels whose
// operands are not plain matrices cuBLAS could take: the LoRA products over
// a group's parts (lora_tc.cu) and the MoE grouped GEMM over per-expert row
// ranges (grouped_matmul_tc.cu). The caller says how to read an element of
// A and of B (a loader, any layout, 0 outside the matrix) and what to do
// with each element of the finished tile (its epilogue); this file stages
// and multiplies.
//
// Rounding happens in one place: as an element is staged into shared
// memory it is converted to bf16 (__float2bfloat16, round to nearest even),
// so an f32 operand (LoRA master weights, an f32 activation or gradient) is
// rounded there and a bf16 one passes exactly. Products are exact in f32
// and summed in k order per output element by the tensor core (on a GPU in
// its truncating groups; under emu in k order with round to nearest):
// deterministic, no atomics.
//
// Block: TC_THREADS (4 warps), each warp 32 × 32 of the tile (2 × 2
// fragments), stepping TC_TK along k. Shared memory: TcSmem, 27 KB,
// static. Row strides are padded by 16 bytes so that the 16 rows a
// fragment load reads start in different banks, and every fragment pointer
// is 32-byte aligned with a leading dimension a multiple of 16 bytes, as
// wmma requires.
#pragma once
#ifndef GRPO_EMU
#include <mma.h>
#endif

#define TC_TM 64
#define TC_TN 64
#define TC_TK 32
#define TC_THREADS 128
#define TC_LDA (TC_TK + 8)  // bf16: 80-byte rows
#define TC_LDB (TC_TN + 8)  // bf16: 144-byte rows
#define TC_LDC (TC_TN + 4)  // f32: 272-byte rows

struct alignas(32) TcSmem {
	__nv_bfloat16 a[TC_TM * TC_LDA];  // A's tile, m × k, row-major
	__nv_bfloat16 b[TC_TK * TC_LDB];  // B's tile, k × n, row-major
	float c[TC_TM * TC_LDC];          // the finished tile, for the epilogue
};

// tc_tile computes the tile C[r, c] = Σ_k A(r, k)·B(k, c) for r < TC_TM,
// c < TC_TN, k < K into s.c (row-major, TC_LDC). la(r, k) and lb(k, c)
// return the operands as float (0 outside the matrix); with AContig the
// staging walks A along k (consecutive threads read consecutive k: for A
// stored with k contiguous), otherwise along r, and BContig likewise walks
// B along k, otherwise along c, so global reads coalesce. Every thread of
// the block must call it; it ends with a barrier, after which any thread
// may read s.c.
template <bool AContig, bool BContig, class LA, class LB>
__device__ __forceinline__ void tc_tile(TcSmem& s, int K, const LA& la, const LB& lb) {
	using namespace nvcuda;
	int warp = threadIdx.x >> 5, wr = (warp >> 1) * 32, wc = (warp & 1) * 32;
	wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.0f);
	for (int k0 = 0; k0 < K; k0 += TC_TK) {
		for (int i = threadIdx.x; i < TC_TM * TC_TK; i += blockDim.x) {
			int r = AContig ? i / TC_TK : i % TC_TM, kk = AContig ? i % TC_TK : i / TC_TM;
			s.a[r * TC_LDA + kk] = __float2bfloat16(k0 + kk < K ? la(r, k0 + kk) : 0.0f);
		}
		for (int i = threadIdx.x; i < TC_TK * TC_TN; i += blockDim.x) {
			int c = BContig ? i / TC_TK : i % TC_TN, kk = BContig ? i % TC_TK : i / TC_TN;
			s.b[kk * TC_LDB + c] = __float2bfloat16(k0 + kk < K ? lb(k0 + kk, c) : 0.0f);
		}
		__syncthreads();
		for (int kk = 0; kk < TC_TK; kk += 16) {
			wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa[2];
			wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb[2];
			for (int i = 0; i < 2; i++) wmma::load_matrix_sync(fa[i], s.a + (wr + 16 * i) * TC_LDA + kk, TC_LDA);
			for (int j = 0; j < 2; j++) wmma::load_matrix_sync(fb[j], s.b + kk * TC_LDB + wc + 16 * j, TC_LDB);
			for (int i = 0; i < 2; i++)
				for (int j = 0; j < 2; j++) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
		}
		__syncthreads();  // the tiles are restaged only after every warp has read them
	}
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++)
			wmma::store_matrix_sync(s.c + (wr + 16 * i) * TC_LDC + wc + 16 * j, acc[i][j], TC_LDC, wmma::mem_row_major);
	__syncthreads();
}
