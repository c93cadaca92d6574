// demo_wmma.cuh: kernels that test emu's wmma emulation (wmma_test.go).
// They are valid CUDA for sm_80+; only emu runs them.
#pragma once
#include "../cuda/common.cuh"
#ifndef GRPO_EMU
#include <mma.h>
#endif

using namespace nvcuda;

template <bool Row>
struct demo_layout {
	typedef wmma::row_major type;
};
template <>
struct demo_layout<false> {
	typedef wmma::col_major type;
};

// demo_wmma_gemm_tiles: c (m × n, f32, layout lc) = a·b + c with a (m × k)
// and b (k × n) bf16 in layouts LA and LB; each warp of a 64-thread block
// computes one M × N tile of c, looping over k in steps of K. The tiles
// are numbered row-major, two per block. Every tile's pointer must be 32-byte
// aligned, which rules out some layouts for the 8-wide shapes (a row-major
// k × 8 tile of b starts 16 bytes into a row).
template <int M, int N, int K, bool ARow, bool BRow>
__device__ void demo_wmma_gemm_tiles(float* c, const __nv_bfloat16* a, const __nv_bfloat16* b, int m, int n, int k,
				     int cRowMajor) {
	int tile = blockIdx.x * 2 + threadIdx.x / 32, tilesN = n / N;
	if (tile >= (m / M) * tilesN) return;  // the whole warp leaves together
	int r0 = tile / tilesN * M, c0 = tile % tilesN * N;
	typedef typename demo_layout<ARow>::type LA;
	typedef typename demo_layout<BRow>::type LB;
	const bool aRow = ARow, bRow = BRow;
	wmma::layout_t lc = cRowMajor ? wmma::mem_row_major : wmma::mem_col_major;
	float* cTile = cRowMajor ? c + (long long)r0 * n + c0 : c + (long long)c0 * m + r0;
	wmma::fragment<wmma::accumulator, M, N, K, float> acc;
	wmma::load_matrix_sync(acc, cTile, cRowMajor ? n : m, lc);
	for (int k0 = 0; k0 < k; k0 += K) {
		wmma::fragment<wmma::matrix_a, M, N, K, __nv_bfloat16, LA> fa;
		wmma::fragment<wmma::matrix_b, M, N, K, __nv_bfloat16, LB> fb;
		wmma::load_matrix_sync(fa, aRow ? a + (long long)r0 * k + k0 : a + (long long)k0 * m + r0, aRow ? k : m);
		wmma::load_matrix_sync(fb, bRow ? b + (long long)k0 * n + c0 : b + (long long)c0 * k + k0, bRow ? n : k);
		wmma::mma_sync(acc, fa, fb, acc);
	}
	wmma::store_matrix_sync(cTile, acc, cRowMajor ? n : m, lc);
}

#define DEMO_WMMA_GEMM(name, M, N, K, ARow, BRow)                                                                   \
	GRPO_KERNEL void __launch_bounds__(64) name(float* c, const __nv_bfloat16* a, const __nv_bfloat16* b, int m, \
						    int n, int k, int cRowMajor) {                                 \
		demo_wmma_gemm_tiles<M, N, K, ARow, BRow>(c, a, b, m, n, k, cRowMajor);                                \
	}
DEMO_WMMA_GEMM(demo_wmma_16x16x16_rr, 16, 16, 16, true, true)
DEMO_WMMA_GEMM(demo_wmma_16x16x16_rc, 16, 16, 16, true, false)
DEMO_WMMA_GEMM(demo_wmma_16x16x16_cr, 16, 16, 16, false, true)
DEMO_WMMA_GEMM(demo_wmma_16x16x16_cc, 16, 16, 16, false, false)
DEMO_WMMA_GEMM(demo_wmma_32x8x16_rc, 32, 8, 16, true, false)
DEMO_WMMA_GEMM(demo_wmma_8x32x16_rr, 8, 32, 16, true, true)

// demo_wmma_layout (one warp) exposes the fragment layout: lane l's
// element i of an accumulator loaded from acc (16 × 16, row-major) goes to
// outAcc[l·8 + i], and of a matrix_a fragment loaded from a (16 × 16 bf16,
// row-major) to outA[l·8 + i].
GRPO_KERNEL void __launch_bounds__(32) demo_wmma_layout(float* outAcc, float* outA, const float* acc,
							 const __nv_bfloat16* a) {
	wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
	wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
	wmma::load_matrix_sync(fc, acc, 16, wmma::mem_row_major);
	wmma::load_matrix_sync(fa, a, 16);
	for (int i = 0; i < fc.num_elements; i++) outAcc[threadIdx.x * fc.num_elements + i] = fc.x[i];
	for (int i = 0; i < fa.num_elements; i++) outA[threadIdx.x * fa.num_elements + i] = __bfloat162float(fa.x[i]);
}

// demo_wmma_divergent: only half the warp calls mma_sync, which the GPU
// leaves undefined; emu reports lanes meeting at different wmma calls.
GRPO_KERNEL void __launch_bounds__(32) demo_wmma_divergent(float* c, const __nv_bfloat16* a) {
	wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
	wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
	wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb;
	wmma::fill_fragment(fc, 0.0f);
	wmma::load_matrix_sync(fa, a, 16);
	wmma::load_matrix_sync(fb, a, 16);
	if (threadIdx.x < 16) wmma::mma_sync(fc, fa, fb, fc);
	wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

// demo_wmma_misaligned loads a fragment from a + off: off·2 bytes must be
// a multiple of 32 (off = 1 traps), and ldm a multiple of 8 elements.
GRPO_KERNEL void __launch_bounds__(32) demo_wmma_misaligned(float* c, const __nv_bfloat16* a, int off, int ldm) {
	wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
	wmma::load_matrix_sync(fa, a + off, ldm);
	c[threadIdx.x] = __bfloat162float(fa.x[0]);
}
