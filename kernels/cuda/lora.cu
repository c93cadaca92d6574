// lora.cu: the LoRA shrink x·Aᵀ over a group's A matrices stored end to
// end, the expand that adds Scale·(x·Aᵀ)·Bᵀ of up to LORA_PARTS
// projections into their base outputs in place, and their backwards.
// Products and sums are f32, in a fixed order: no atomics, so results do
// not depend on scheduling. These are the f32-activation kernels; a bf16
// x or xa takes lora_tc.cu's tensor-core ones instead. The expand's Y (and
// its backward's dY) and the shrink backward's dx may be bf16 (the _ybf16,
// _dxbf16 kernels): read widened, summed in f32, rounded once at the store.
// nvcc -ptx -arch=compute_90 lora.cu
#include "common.cuh"

// LORA_WARPS warps per 256-thread block; LORA_MAX_RANK_PER_LANE bounds a
// part's rank in lora_expand_backward_db (32 lanes × 8 = 256; the Go side
// refuses more).
#define LORA_WARPS 8
#define LORA_MAX_RANK_PER_LANE 8

#include "lora.cuh"

// xa[r, k] = Σ_i x[r, i]·a[k, i]. grid (rows, ⌈ranks/8⌉): warp w of block
// (r, y) takes k = 8y + w, its lanes stride over i, and warp_sum reduces.
template <class X>
__device__ __forceinline__ void lora_shrink(float* xa, const X* x, const float* a, int in, int ranks) {
	int lane = threadIdx.x & 31, k = blockIdx.y * LORA_WARPS + (threadIdx.x >> 5);
	if (k >= ranks) return;  // whole warps leave; no block barrier follows
	long long r = blockIdx.x;
	float s = 0.0f;
	for (int i = lane; i < in; i += 32) s += ldc(x, r * in + i) * ldc(a, (long long)k * in + i);
	s = warp_sum(s);
	if (lane == 0) xa[r * ranks + k] = s;
}
GRPO_KERNEL void __launch_bounds__(256) lora_shrink_f32(float* xa, const float* x, const float* a, int rows, int in, int ranks) {
	lora_shrink(xa, x, a, in, ranks);
}

// y[r, y_off + j] += scale·Σ_k xa[r, xa_off + k]·b[j, k]. grid (rows,
// ⌈max out/256⌉, parts), one thread per output column. A bf16 y is read
// widened and rounded once, at the store.
template <class Y>
__device__ __forceinline__ void lora_expand(const float* xa, int rows, int ranks, LORA_PARTS_Y(Y)) {
	LORA_PICK(blockIdx.z);
	int j = blockIdx.y * blockDim.x + threadIdx.x;
	if (j >= p.out) return;
	long long r = blockIdx.x;
	const float* xr = xa + r * ranks + p.xa_off;
	const float* br = p.b + (long long)j * p.rank;
	float s = 0.0f;
	for (int k = 0; k < p.rank; k++) s += ldc(xr, k) * ldc(br, k);
	long long o = r * p.y_cols + p.y_off + j;
	st(p.y, o, ldc(p.y, o) + p.scale * s);
}
GRPO_KERNEL void __launch_bounds__(256) lora_expand_f32(const float* xa, int rows, int ranks, LORA_PARTS_Y(float)) {
	lora_expand(xa, rows, ranks, LORA_PART_ARGS);
}
GRPO_KERNEL void __launch_bounds__(256) lora_expand_f32_ybf16(const float* xa, int rows, int ranks, LORA_PARTS_Y(__nv_bfloat16)) {
	lora_expand(xa, rows, ranks, LORA_PART_ARGS);
}

// LoRAExpandBackward in one launch: grid (rows·dxa_y·parts + db_x·parts),
// the first rows·dxa_y·parts blocks computing dxa, the rest dB (db_x = 0
// when no part wants dB). Neither reads what the other writes.
//
// dxa[r, xa_off + k] = scale·Σ_j dy[r, y_off + j]·b[j, k] (p.y holds dy,
// f32 or bf16 read widened): block (r, y) of a part, a warp per k = 8y +
// w, lanes over j.
template <class Y>
__device__ __forceinline__ void lora_dxa(const lora_part<Y>& p, float* dxa, long long r, int y, int ranks) {
	int lane = threadIdx.x & 31, k = y * LORA_WARPS + (threadIdx.x >> 5);
	if (k >= p.rank) return;
	const Y* dy = p.y + r * p.y_cols + p.y_off;
	float s = 0.0f;
	for (int j = lane; j < p.out; j += 32) s += ldc(dy, j) * ldc(p.b, (long long)j * p.rank + k);
	s = warp_sum(s);
	if (lane == 0) dxa[r * ranks + p.xa_off + k] = p.scale * s;
}

// db[j, k] += scale·Σ_r dy[r, y_off + j]·xa[r, xa_off + k]: block x of a
// part, a warp per j = 8x + w, each lane holding ranks k = lane + 32m,
// summed over every row in order.
template <class Y>
__device__ __forceinline__ void lora_db(const lora_part<Y>& p, const float* xa, int x, int rows, int ranks) {
	int lane = threadIdx.x & 31, j = x * LORA_WARPS + (threadIdx.x >> 5);
	if (!p.db || j >= p.out) return;
	float acc[LORA_MAX_RANK_PER_LANE];
	for (int m = 0; m < LORA_MAX_RANK_PER_LANE; m++) acc[m] = 0.0f;
	for (long long r = 0; r < rows; r++) {
		float dy = ldc(p.y, r * p.y_cols + p.y_off + j);
		const float* xr = xa + r * ranks + p.xa_off;
		for (int m = 0; m < LORA_MAX_RANK_PER_LANE; m++) {
			int k = lane + 32 * m;
			if (k < p.rank) acc[m] += dy * ldc(xr, k);
		}
	}
	for (int m = 0; m < LORA_MAX_RANK_PER_LANE; m++) {
		int k = lane + 32 * m;
		if (k < p.rank) p.db[(long long)j * p.rank + k] = ldc(p.db, (long long)j * p.rank + k) + p.scale * acc[m];
	}
}

template <class Y>
__device__ __forceinline__ void lora_expand_backward(float* dxa, const float* xa, int rows, int ranks, int parts, int dxa_y, int db_x,
						     LORA_PARTS_Y(Y)) {
	long long b = blockIdx.x, n_dxa = (long long)rows * dxa_y * parts;
	if (b < n_dxa) {
		int z = (int)(b / ((long long)rows * dxa_y));
		long long rem = b % ((long long)rows * dxa_y);
		LORA_PICK(z);
		lora_dxa(p, dxa, rem / dxa_y, (int)(rem % dxa_y), ranks);
		return;
	}
	b -= n_dxa;
	LORA_PICK((int)(b / db_x));
	lora_db(p, xa, (int)(b % db_x), rows, ranks);
}
GRPO_KERNEL void __launch_bounds__(256) lora_expand_backward_f32(float* dxa, const float* xa, int rows, int ranks, int parts, int dxa_y,
								  int db_x, LORA_PARTS_Y(float)) {
	lora_expand_backward(dxa, xa, rows, ranks, parts, dxa_y, db_x, LORA_PART_ARGS);
}
GRPO_KERNEL void __launch_bounds__(256) lora_expand_backward_f32_ybf16(float* dxa, const float* xa, int rows, int ranks, int parts,
									int dxa_y, int db_x, LORA_PARTS_Y(__nv_bfloat16)) {
	lora_expand_backward(dxa, xa, rows, ranks, parts, dxa_y, db_x, LORA_PART_ARGS);
}

// LoRAShrinkBackward in one launch: grid (dx_blocks + da_blocks), either
// count 0 when its output is not wanted; neither reads what the other
// writes.
//
// dx[r, i] += Σ_k dxa[r, k]·a[k, i]: dx_y blocks per row, a thread per i;
// a bf16 dx is read widened and rounded once, at the store.
// da[k, i] += Σ_r dxa[r, k]·x[r, i]: block (x, y) a thread per i holding
// 8 ranks k = 8y + m, summed over every row in order.
template <class DX>
__device__ __forceinline__ void lora_shrink_backward(DX* dx, float* da, const float* dxa, const float* x, const float* a, int rows, int in,
						     int ranks, int dx_blocks) {
	int in_blocks = (in + blockDim.x - 1) / blockDim.x;
	if ((long long)blockIdx.x < dx_blocks) {
		long long r = blockIdx.x / in_blocks;
		int i = (blockIdx.x % in_blocks) * blockDim.x + threadIdx.x;
		if (i >= in) return;
		float s = 0.0f;
		for (int k = 0; k < ranks; k++) s += ldc(dxa, r * ranks + k) * ldc(a, (long long)k * in + i);
		st(dx, r * in + i, ldc(dx, r * in + i) + s);
		return;
	}
	int b = blockIdx.x - dx_blocks;
	int i = (b % in_blocks) * blockDim.x + threadIdx.x, k0 = (b / in_blocks) * LORA_WARPS;
	if (i >= in) return;
	float acc[LORA_WARPS];
	for (int m = 0; m < LORA_WARPS; m++) acc[m] = 0.0f;
	for (long long r = 0; r < rows; r++) {
		float xv = ldc(x, r * in + i);
		const float* g = dxa + r * ranks + k0;
		for (int m = 0; m < LORA_WARPS; m++)
			if (k0 + m < ranks) acc[m] += ldc(g, m) * xv;
	}
	for (int m = 0; m < LORA_WARPS; m++)
		if (k0 + m < ranks) da[(long long)(k0 + m) * in + i] = ldc(da, (long long)(k0 + m) * in + i) + acc[m];
}
GRPO_KERNEL void __launch_bounds__(256) lora_shrink_backward_f32(float* dx, float* da, const float* dxa, const float* x, const float* a,
								  int rows, int in, int ranks, int dx_blocks) {
	lora_shrink_backward(dx, da, dxa, x, a, rows, in, ranks, dx_blocks);
}
GRPO_KERNEL void __launch_bounds__(256) lora_shrink_backward_f32_dxbf16(__nv_bfloat16* dx, float* da, const float* dxa, const float* x,
									 const float* a, int rows, int in, int ranks, int dx_blocks) {
	lora_shrink_backward(dx, da, dxa, x, a, rows, in, ranks, dx_blocks);
}
