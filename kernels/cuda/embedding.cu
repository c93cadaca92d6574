// embedding.cu: GatherRows (embedding lookup, logits-row selection) and
// KVWrite (scatter rows into the paged KV cache). One block per
// row moved, threads striding over the columns, so reads and writes are
// coalesced.
// nvcc -ptx -arch=compute_90 embedding.cu
#include "common.cuh"

// grid (n), block (any): out[i, :] = table[idx[i], :], widening a bf16
// table (embeddings stay bf16 on the GPU).
template <class T>
__device__ __forceinline__ void gather_rows(float* out, const T* table, const int* idx, int cols) {
	int i = blockIdx.x;
	long long src = (long long)idx[i] * cols;
	for (int c = threadIdx.x; c < cols; c += blockDim.x) out[(long long)i * cols + c] = ld(table, src + c);
}
GRPO_KERNEL void __launch_bounds__(256) gather_rows_f32(float* out, const float* table, const int* idx, int n, int cols) {
	gather_rows(out, table, idx, cols);
}
GRPO_KERNEL void __launch_bounds__(256) gather_rows_bf16(float* out, const __nv_bfloat16* table, const int* idx, int n, int cols) {
	gather_rows(out, table, idx, cols);
}
// gather_rows_as is gather_rows with out and table each f32 or bf16 (bit 0
// of bf16: out, 1: table): a bf16 activation's rows (MoE's tokens to their
// experts), read widened and stored rounded once, so bf16 to bf16 is exact.
GRPO_KERNEL void __launch_bounds__(256) gather_rows_as(void* out, const void* table, const int* idx, int n, int cols, int bf16) {
	int i = blockIdx.x;
	long long src = (long long)idx[i] * cols;
	for (int c = threadIdx.x; c < cols; c += blockDim.x) st_as(out, bf16 & 1, (long long)i * cols + c, ld_as(table, bf16 & 2, src + c));
}

// grid (nTok), block (any): the cache row of position pos[t] of sequence
// seq[t] = x[t, :], rounded to nearest even for a bf16 cache (the
// sampler's, on the GPU).
__device__ __forceinline__ void st(float* p, long long i, float v) { p[i] = v; }
__device__ __forceinline__ void st(__nv_bfloat16* p, long long i, float v) { p[i] = __float2bfloat16_rn(v); }
template <class T>
__device__ __forceinline__ void kv_write(T* cache, const float* x, const int* seq, const int* pos, const int* table, int width,
					 int blockSize, int maxBlocks) {
	int t = blockIdx.x;
	long long dst = kv_row(table, seq[t], pos[t], blockSize, maxBlocks) * width;
	for (int c = threadIdx.x; c < width; c += blockDim.x) st(cache, dst + c, x[(long long)t * width + c]);
}
GRPO_KERNEL void __launch_bounds__(256) kv_write_f32(float* cache, const float* x, const int* seq, const int* pos, const int* table,
						     int nTok, int width, int blockSize, int maxBlocks) {
	kv_write(cache, x, seq, pos, table, width, blockSize, maxBlocks);
}
GRPO_KERNEL void __launch_bounds__(256) kv_write_bf16(__nv_bfloat16* cache, const float* x, const int* seq, const int* pos,
						      const int* table, int nTok, int width, int blockSize, int maxBlocks) {
	kv_write(cache, x, seq, pos, table, width, blockSize, maxBlocks);
}
