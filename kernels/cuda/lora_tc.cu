// lora_tc.cu: the LoRA ops of lora.cu on tensor cores (tensor_core.cuh:
// 64 × 64 tiles, bf16 operands, f32 accumulation), taken when the
// activation an op reads is bf16 (kernels/cuda/lora_ops.go): the shrink
// when x or xa is BF16, the shrink's backward when x is, the expand and its
// backward when xa is. Every f32 operand — the f32 LoRA master weights A
// and B, an f32 x, the f32 gradients dy and dxa — is rounded to bf16 as it
// is staged into shared memory (tc_tile), the one place rounding happens;
// bf16 operands are read exactly. Results are f32 sums in k order added
// in place, or written, by the epilogue: no atomics, each output element
// written by one thread of one block, so results do not depend on
// scheduling. The grouping over parts (lora.cuh) is lora.cu's. The
// expand's Y (its backward's dY) and the shrink backward's dx may be bf16
// (the _ybf16, _dxbf16 kernels): read widened, rounded once at the store.
// nvcc -ptx -arch=compute_90 lora_tc.cu
#include "common.cuh"
#include "tensor_core.cuh"
#include "lora.cuh"

// xa[r, k] = Σ_i x[r, i]·a[k, i] (rows × ranks). grid (⌈rows/64⌉,
// ⌈ranks/64⌉), block TC_THREADS.
template <class X, class XA>
__device__ __forceinline__ void lora_shrink_tc(XA* xa, const X* x, const float* a, int rows, int in, int ranks) {
	GRPO_SHARED(TcSmem, s, );
	int r0 = blockIdx.x * TC_TM, c0 = blockIdx.y * TC_TN;
	tc_tile<true, true>(
	    s, in, [&](int r, int k) { return r0 + r < rows ? ldc(x, (long long)(r0 + r) * in + k) : 0.0f; },
	    [&](int k, int c) { return c0 + c < ranks ? ldc(a, (long long)(c0 + c) * in + k) : 0.0f; });
	for (int i = threadIdx.x; i < TC_TM * TC_TN; i += blockDim.x) {
		int r = r0 + i / TC_TN, c = c0 + i % TC_TN;
		if (r < rows && c < ranks) st(xa, (long long)r * ranks + c, s.c[(i / TC_TN) * TC_LDC + i % TC_TN]);
	}
}
GRPO_KERNEL void __launch_bounds__(TC_THREADS) lora_shrink_tc_xbf16(float* xa, const __nv_bfloat16* x, const float* a, int rows, int in,
								    int ranks) {
	lora_shrink_tc(xa, x, a, rows, in, ranks);
}
GRPO_KERNEL void __launch_bounds__(TC_THREADS) lora_shrink_tc_xabf16(__nv_bfloat16* xa, const float* x, const float* a, int rows, int in,
								     int ranks) {
	lora_shrink_tc(xa, x, a, rows, in, ranks);
}
GRPO_KERNEL void __launch_bounds__(TC_THREADS) lora_shrink_tc_bf16(__nv_bfloat16* xa, const __nv_bfloat16* x, const float* a, int rows,
								   int in, int ranks) {
	lora_shrink_tc(xa, x, a, rows, in, ranks);
}

// y[r, y_off + j] += scale·Σ_k xa[r, xa_off + k]·b[j, k]. grid
// (⌈rows/64⌉, ⌈max out/64⌉, parts), block TC_THREADS; blocks past their
// part's out return. A bf16 y is read widened and rounded once, at the
// store.
template <class Y>
__device__ __forceinline__ void lora_expand_tc_body(const __nv_bfloat16* xa, int rows, int ranks, LORA_PARTS_Y(Y)) {
	GRPO_SHARED(TcSmem, s, );
	LORA_PICK(blockIdx.z);
	int r0 = blockIdx.x * TC_TM, c0 = blockIdx.y * TC_TN;
	if (c0 >= p.out) return;  // the whole block
	tc_tile<true, true>(
	    s, p.rank, [&](int r, int k) { return r0 + r < rows ? ldc(xa, (long long)(r0 + r) * ranks + p.xa_off + k) : 0.0f; },
	    [&](int k, int c) { return c0 + c < p.out ? ldc(p.b, (long long)(c0 + c) * p.rank + k) : 0.0f; });
	for (int i = threadIdx.x; i < TC_TM * TC_TN; i += blockDim.x) {
		int r = r0 + i / TC_TN, j = c0 + i % TC_TN;
		if (r < rows && j < p.out) {
			long long o = (long long)r * p.y_cols + p.y_off + j;
			st(p.y, o, ldc(p.y, o) + p.scale * s.c[(i / TC_TN) * TC_LDC + i % TC_TN]);
		}
	}
}

GRPO_KERNEL void __launch_bounds__(TC_THREADS) lora_expand_tc(const __nv_bfloat16* xa, int rows, int ranks, LORA_PARTS_Y(float)) {
	lora_expand_tc_body(xa, rows, ranks, LORA_PART_ARGS);
}
GRPO_KERNEL void __launch_bounds__(TC_THREADS) lora_expand_tc_ybf16(const __nv_bfloat16* xa, int rows, int ranks,
								    LORA_PARTS_Y(__nv_bfloat16)) {
	lora_expand_tc_body(xa, rows, ranks, LORA_PART_ARGS);
}

// LoRAExpandBackward in one launch, grid (dxa_blocks + db_blocks), block
// TC_THREADS. dxa's blocks, parts × ⌈rows/64⌉ × ⌈max rank/64⌉, compute
// dxa[r, xa_off + k] = scale·Σ_j dy[r, y_off + j]·b[j, k] (p.y holds dy);
// dB's, parts × ⌈max out/64⌉ × ⌈max rank/64⌉ (none when no part wants dB),
// add db[j, k] += scale·Σ_r dy[r, y_off + j]·xa[r, xa_off + k], summed over
// every row in order. Neither reads what the other writes. A bf16 dy is
// read exactly.
template <class Y>
__device__ __forceinline__ void lora_expand_backward_tc_body(float* dxa, const __nv_bfloat16* xa, int rows, int ranks, int dxa_blocks,
							     int row_tiles, int rank_tiles, int out_tiles, LORA_PARTS_Y(Y)) {
	GRPO_SHARED(TcSmem, s, );
	int b = blockIdx.x;
	if (b < dxa_blocks) {
		LORA_PICK(b / (row_tiles * rank_tiles));
		int rem = b % (row_tiles * rank_tiles);
		int r0 = (rem / rank_tiles) * TC_TM, c0 = (rem % rank_tiles) * TC_TN;
		if (c0 >= p.rank) return;
		const Y* dy = p.y + p.y_off;
		tc_tile<true, false>(
		    s, p.out, [&](int r, int j) { return r0 + r < rows ? ldc(dy, (long long)(r0 + r) * p.y_cols + j) : 0.0f; },
		    [&](int j, int c) { return c0 + c < p.rank ? ldc(p.b, (long long)j * p.rank + c0 + c) : 0.0f; });
		for (int i = threadIdx.x; i < TC_TM * TC_TN; i += blockDim.x) {
			int r = r0 + i / TC_TN, k = c0 + i % TC_TN;
			if (r < rows && k < p.rank) dxa[(long long)r * ranks + p.xa_off + k] = p.scale * s.c[(i / TC_TN) * TC_LDC + i % TC_TN];
		}
		return;
	}
	b -= dxa_blocks;
	LORA_PICK(b / (out_tiles * rank_tiles));
	int rem = b % (out_tiles * rank_tiles);
	int j0 = (rem / rank_tiles) * TC_TM, c0 = (rem % rank_tiles) * TC_TN;
	if (!p.db || j0 >= p.out || c0 >= p.rank) return;
	const Y* dy = p.y + p.y_off;
	tc_tile<false, false>(
	    s, rows, [&](int j, int r) { return j0 + j < p.out ? ldc(dy, (long long)r * p.y_cols + j0 + j) : 0.0f; },
	    [&](int r, int c) { return c0 + c < p.rank ? ldc(xa, (long long)r * ranks + p.xa_off + c0 + c) : 0.0f; });
	for (int i = threadIdx.x; i < TC_TM * TC_TN; i += blockDim.x) {
		int j = j0 + i / TC_TN, k = c0 + i % TC_TN;
		if (j < p.out && k < p.rank) {
			long long o = (long long)j * p.rank + k;
			p.db[o] = ldc(p.db, o) + p.scale * s.c[(i / TC_TN) * TC_LDC + i % TC_TN];
		}
	}
}

GRPO_KERNEL void __launch_bounds__(TC_THREADS) lora_expand_backward_tc(float* dxa, const __nv_bfloat16* xa, int rows, int ranks,
								       int dxa_blocks, int row_tiles, int rank_tiles, int out_tiles,
								       LORA_PARTS_Y(float)) {
	lora_expand_backward_tc_body(dxa, xa, rows, ranks, dxa_blocks, row_tiles, rank_tiles, out_tiles, LORA_PART_ARGS);
}
GRPO_KERNEL void __launch_bounds__(TC_THREADS) lora_expand_backward_tc_ybf16(float* dxa, const __nv_bfloat16* xa, int rows, int ranks,
									     int dxa_blocks, int row_tiles, int rank_tiles, int out_tiles,
									     LORA_PARTS_Y(__nv_bfloat16)) {
	lora_expand_backward_tc_body(dxa, xa, rows, ranks, dxa_blocks, row_tiles, rank_tiles, out_tiles, LORA_PART_ARGS);
}

// LoRAShrinkBackward in one launch, grid (dx_blocks + da_blocks), block
// TC_THREADS, either count 0 when its output is not wanted. dx's blocks,
// ⌈rows/64⌉ × ⌈in/64⌉, add dx[r, i] += Σ_k dxa[r, k]·a[k, i]; dA's,
// ⌈ranks/64⌉ × ⌈in/64⌉, add da[k, i] += Σ_r dxa[r, k]·x[r, i], summed over
// every row in order. A bf16 dx is read widened and rounded once, at the
// store.
template <class DX>
__device__ __forceinline__ void lora_shrink_backward_tc_body(DX* dx, float* da, const float* dxa, const __nv_bfloat16* x, const float* a,
							     int rows, int in, int ranks, int dx_blocks) {
	GRPO_SHARED(TcSmem, s, );
	int inTiles = (in + TC_TN - 1) / TC_TN;
	int b = blockIdx.x;
	if (b < dx_blocks) {
		int r0 = (b / inTiles) * TC_TM, c0 = (b % inTiles) * TC_TN;
		tc_tile<true, false>(
		    s, ranks, [&](int r, int k) { return r0 + r < rows ? ldc(dxa, (long long)(r0 + r) * ranks + k) : 0.0f; },
		    [&](int k, int c) { return c0 + c < in ? ldc(a, (long long)k * in + c0 + c) : 0.0f; });
		for (int i = threadIdx.x; i < TC_TM * TC_TN; i += blockDim.x) {
			int r = r0 + i / TC_TN, c = c0 + i % TC_TN;
			if (r < rows && c < in) {
				long long o = (long long)r * in + c;
				st(dx, o, ldc(dx, o) + s.c[(i / TC_TN) * TC_LDC + i % TC_TN]);
			}
		}
		return;
	}
	b -= dx_blocks;
	int k0 = (b / inTiles) * TC_TM, c0 = (b % inTiles) * TC_TN;
	tc_tile<false, false>(
	    s, rows, [&](int k, int r) { return k0 + k < ranks ? ldc(dxa, (long long)r * ranks + k0 + k) : 0.0f; },
	    [&](int r, int c) { return c0 + c < in ? ldc(x, (long long)r * in + c0 + c) : 0.0f; });
	for (int i = threadIdx.x; i < TC_TM * TC_TN; i += blockDim.x) {
		int k = k0 + i / TC_TN, c = c0 + i % TC_TN;
		if (k < ranks && c < in) {
			long long o = (long long)k * in + c;
			da[o] = ldc(da, o) + s.c[(i / TC_TN) * TC_LDC + i % TC_TN];
		}
	}
}
GRPO_KERNEL void __launch_bounds__(TC_THREADS) lora_shrink_backward_tc(float* dx, float* da, const float* dxa, const __nv_bfloat16* x,
								       const float* a, int rows, int in, int ranks, int dx_blocks) {
	lora_shrink_backward_tc_body(dx, da, dxa, x, a, rows, in, ranks, dx_blocks);
}
GRPO_KERNEL void __launch_bounds__(TC_THREADS) lora_shrink_backward_tc_dxbf16(__nv_bfloat16* dx, float* da, const float* dxa,
									      const __nv_bfloat16* x, const float* a, int rows, int in,
									      int ranks, int dx_blocks) {
	lora_shrink_backward_tc_body(dx, da, dxa, x, a, rows, in, ranks, dx_blocks);
}
