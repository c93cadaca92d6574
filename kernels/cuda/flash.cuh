// flash.cuh: what the tensor-core attention kernels (attention_flash.cu,
// attention_flash_backward.cu) share: the paged KV cache's addressing, the
// tile shapes, and the loads of f32 and bf16 rows into bf16 shared tiles.
//
// Rows. A tile's rows are (token, query head) pairs of one KV head g:
// row R of the launch is token R / group, head g·group + R % group, so a
// K/V tile is loaded once for all query heads of its GQA group. A row past
// the last token is invalid (seq −1) and contributes nothing.
//
// Tiles are FLASH_ROWS query rows by FLASH_KEYS keys; a block of
// FLASH_THREADS threads (FLASH_WARPS warps) gives each warp 16 rows (or 16
// keys in the dK/dV pass). Head dims are padded with zeros to HD, the
// template's multiple of 16, so any headDim ≤ 128 takes this path.
#pragma once
#include "common.cuh"
#include "paged.cuh"
#ifndef GRPO_EMU
#include <mma.h>
#endif

using namespace nvcuda;

#define FLASH_WARPS 4
#define FLASH_THREADS (32 * FLASH_WARPS)
#define FLASH_ROWS (16 * FLASH_WARPS)
#define FLASH_KEYS 64

// FLASH_NO_UNROLL keeps nvcc from unrolling the f32 tile products: nvcc
// 11.8's unrolled FMA chains there come out in a different order from run
// to run, so the committed PTX could not be reproduced (TestPTXIsCurrent).
#ifdef GRPO_EMU
#define FLASH_NO_UNROLL
#else
#define FLASH_NO_UNROLL _Pragma("unroll 1")
#endif

// flash_smem_bytes rounds a shared-memory region up to 128 bytes, so every
// region a wmma load reads starts 32-byte aligned.
__host__ __device__ __forceinline__ int flash_align(int bytes) { return (bytes + 127) / 128 * 128; }

// Tiles are stored as T, the cache's element type: __nv_bfloat16 tiles
// are multiplied on tensor cores (wmma), float tiles by the warp's lanes
// in f32 (so a backend whose KV cache is f32 keeps f32 attention, in the
// same tiling, ownership and summation structure). to_tile rounds an f32
// value into a tile.
__device__ __forceinline__ void to_tile(float* t, float v) { *t = v; }
__device__ __forceinline__ void to_tile(__nv_bfloat16* t, float v) { *t = __float2bfloat16_rn(v); }

// load_kv_tile fills tile (FLASH_KEYS × HD) with the keys j0.. of
// sequence s of KV head g, zeros for dims ≥ headDim and for positions
// outside first..last (which are never read: the cache past a sequence's
// last queried position, or before every window, may hold garbage and
// its block table entries may be unset).
template <int HD, class T>
__device__ __forceinline__ void load_kv_tile(T* tile, const T* cache, const int* table, int blockSize, int maxBlocks,
					     int s, int j0, int first, int last, int g, int headDim, int width) {
	for (int i = threadIdx.x; i < FLASH_KEYS * HD; i += blockDim.x) {
		int c = i / HD, d = i % HD, p = j0 + c;
		float v = 0.0f;
		if (p >= first && p <= last && d < headDim)
			v = ld(cache, kv_row(table, s, p, blockSize, maxBlocks) * width + (long long)g * headDim + d);
		to_tile(tile + i, v);
	}
}

// load_rows fills tile (FLASH_ROWS × HD) with rows r0.. of x (nTok ×
// nHead × headDim f32), zeros for dims ≥ headDim and invalid rows.
template <int HD, class T>
__device__ __forceinline__ void load_rows(T* tile, const float* x, int r0, int nRows, int group, int g, int nHead,
					  int headDim) {
	for (int i = threadIdx.x; i < FLASH_ROWS * HD; i += blockDim.x) {
		int r = r0 + i / HD, d = i % HD;
		float v = 0.0f;
		if (r < nRows && d < headDim) {
			long long t = r / group, h = (long long)g * group + r % group;
			v = x[(t * nHead + h) * headDim + d];
		}
		to_tile(tile + i, v);
	}
}

// row_offset is the element offset of row r's (token, head) in an nTok ×
// nHead × headDim tensor.
__device__ __forceinline__ long long row_offset(int r, int group, int g, int nHead, int headDim) {
	long long t = r / group, h = (long long)g * group + r % group;
	return (t * nHead + h) * headDim;
}

// rows_by_keys: out (16 × 64 f32, ldm 64) = a (16 × HD, ldm HD) · bᵀ with
// b 64 × HD (ldm HD): 16 rows' scores against a tile of keys (or, in the
// dK/dV pass, 16 keys against a tile of rows). One warp.
template <int HD>
__device__ __forceinline__ void rows_by_keys(float* out, const __nv_bfloat16* a, const __nv_bfloat16* b) {
	for (int n = 0; n < 4; n++) {
		wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
		wmma::fill_fragment(acc, 0.0f);
		for (int k = 0; k < HD / 16; k++) {
			wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
			wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;
			wmma::load_matrix_sync(fa, a + 16 * k, HD);
			wmma::load_matrix_sync(fb, b + 16 * n * HD + 16 * k, HD);
			wmma::mma_sync(acc, fa, fb, acc);
		}
		wmma::store_matrix_sync(out + 16 * n, acc, 64, wmma::mem_row_major);
	}
}
template <int HD>
__device__ __forceinline__ void rows_by_keys(float* out, const float* a, const float* b) {
	for (int e = threadIdx.x % 32; e < 16 * 64; e += 32) {
		int r = e / 64, c = e % 64;
		float s = 0.0f;
		FLASH_NO_UNROLL
		for (int d = 0; d < HD; d++) s += a[r * HD + d] * b[c * HD + d];
		out[e] = s;
	}
}

// Acc<T, HD> is a warp's 16 × HD f32 accumulator (dQ, dK, dV, P·V):
// wmma fragments for bf16 tiles, HD/2 floats per lane for f32 tiles
// (lane l holds element l + 32·i of the row-major block). Only
// accumulate, scale and store touch it, so neither layout leaks.
template <class T, int HD>
struct Acc;

template <int HD>
struct Acc<__nv_bfloat16, HD> {
	wmma::fragment<wmma::accumulator, 16, 16, 16, float> f[HD / 16];
	__device__ __forceinline__ void zero() {
		for (int n = 0; n < HD / 16; n++) wmma::fill_fragment(f[n], 0.0f);
	}
	// accumulate adds a (16 × 16·K16, ldm lda) · b (16·K16 × HD, ldm HD).
	template <int K16>
	__device__ __forceinline__ void accumulate(const __nv_bfloat16* a, int lda, const __nv_bfloat16* b) {
		for (int k = 0; k < K16; k++) {
			wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
			wmma::load_matrix_sync(fa, a + 16 * k, lda);
			for (int n = 0; n < HD / 16; n++) {
				wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb;
				wmma::load_matrix_sync(fb, b + (long long)16 * k * HD + 16 * n, HD);
				wmma::mma_sync(f[n], fa, fb, f[n]);
			}
		}
	}
	__device__ __forceinline__ void scale(float s) {
		for (int n = 0; n < HD / 16; n++)
			for (int i = 0; i < f[n].num_elements; i++) f[n].x[i] *= s;
	}
	// store writes the block to out (16 × HD f32, ldm HD).
	__device__ __forceinline__ void store(float* out) {
		for (int n = 0; n < HD / 16; n++) wmma::store_matrix_sync(out + 16 * n, f[n], HD, wmma::mem_row_major);
	}
};

template <int HD>
struct Acc<float, HD> {
	float x[HD / 2];
	__device__ __forceinline__ void zero() {
		for (int i = 0; i < HD / 2; i++) x[i] = 0.0f;
	}
	template <int K16>
	__device__ __forceinline__ void accumulate(const float* a, int lda, const float* b) {
		int lane = threadIdx.x % 32;
		for (int i = 0; i < HD / 2; i++) {
			int e = lane + 32 * i, r = e / HD, c = e % HD;
			float s = x[i];
			FLASH_NO_UNROLL
			for (int k = 0; k < 16 * K16; k++) s += a[r * lda + k] * b[(long long)k * HD + c];
			x[i] = s;
		}
	}
	__device__ __forceinline__ void scale(float s) {
		for (int i = 0; i < HD / 2; i++) x[i] *= s;
	}
	__device__ __forceinline__ void store(float* out) {
		int lane = threadIdx.x % 32;
		for (int i = 0; i < HD / 2; i++) out[lane + 32 * i] = x[i];
	}
};
