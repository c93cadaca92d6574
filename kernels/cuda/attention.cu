// attention.cu: causal grouped-query attention over the paged KV cache
// (kernels.KVPages), with the online (flash) softmax so the scores of a
// row are never stored whole.
//
// Launch: grid (nTok, nHead), block (128), dynamic shared memory
// (headDim + 2·blockDim) floats. One block per (token, head): the block
// walks the token's visible keys in tiles of blockDim; thread j finds the
// cache row of key j of the tile through the block table (kept in shared
// memory for the V pass) and scores it (a serial dot product with q held
// in shared memory), the block
// finds the tile's max and probability sum, rescales the running sum and
// accumulator, and each thread accumulates the probability-weighted V for
// its output dims (dims d ≡ threadIdx.x mod blockDim; headDim ≤
// ATTN_MAX_DIM_PER_THREAD·blockDim). The same call serves prefill, decode
// and packed batches because each token carries its own sequence and
// position. Variants (kernels.AttentionVariant): with window > 0 the keys
// start at pos − window + 1 (no key before is read); sinks (one logit per
// query head, or null) join the softmax's denominator after the last tile.
// nvcc -ptx -arch=compute_90 attention.cu
#include "common.cuh"

#define ATTN_MAX_DIM_PER_THREAD 2

// Keys visible to a token at position p: 0..p inclusive.
#ifdef GRPO_PLANT_OFF_BY_ONE
#define ATTN_VISIBLE(p) (p)  // test-only bug: drops the diagonal (kernels/emu planted_test.go)
#else
#define ATTN_VISIBLE(p) ((p) + 1)
#endif

// The cache is f32 (training) or bf16 (the sampler's on the GPU): T is
// its element type, widened to f32 on every read; all arithmetic is f32.
template <class T>
__device__ __forceinline__ void attention(float* out, float* lse, const float* q, const T* kCache, const T* vCache, const int* seq,
					  const int* pos, const int* table, int nHead, int nKV, int headDim, int blockSize,
					  int maxBlocks, float scale, int window, const float* sinks) {
	GRPO_DYNAMIC_SHARED(float, smem);
	GRPO_SHARED(float, scratch, [32]);
	float* qs = smem;                     // headDim
	float* ps = smem + headDim;           // blockDim: probabilities of the tile
	int* rows = (int*)(ps + blockDim.x);  // blockDim: the cache row of each key of the tile
	int t = blockIdx.x, h = blockIdx.y, tid = threadIdx.x, bd = blockDim.x;
	int g = h / (nHead / nKV);
	int s = seq[t];
	int n = ATTN_VISIBLE(pos[t]);
	int lo = window > 0 ? max(0, pos[t] - window + 1) : 0;
	long long rowStride = (long long)nKV * headDim;
	const T* kBase = kCache + (long long)g * headDim;
	const T* vBase = vCache + (long long)g * headDim;
	const float* qRow = q + ((long long)t * nHead + h) * headDim;
	for (int d = tid; d < headDim; d += bd) qs[d] = qRow[d];
	__syncthreads();

	float m = -INFINITY, l = 0.0f;
	float acc[ATTN_MAX_DIM_PER_THREAD] = {};
	for (int j0 = lo; j0 < n; j0 += bd) {
		int j = j0 + tid;
		float sc = -INFINITY;
		if (j < n) {
			long long r = kv_row(table, s, j, blockSize, maxBlocks);
			rows[tid] = (int)r;
			const T* kRow = kBase + r * rowStride;
			float dot = 0.0f;
			for (int d = 0; d < headDim; d++) dot += qs[d] * ld(kRow, d);
			sc = dot * scale;
		}
		float mNew = fmaxf(m, block_max(sc, scratch));
		float p = j < n ? expf(sc - mNew) : 0.0f;
		ps[tid] = p;
		float tileSum = block_sum(p, scratch);  // its barriers also publish ps and rows
		float corr = expf(m - mNew);            // 0 on the first tile (m = -Inf)
		l = l * corr + tileSum;
		int tile = min(bd, n - j0);
		for (int k = 0; k < ATTN_MAX_DIM_PER_THREAD; k++) {
			int d = tid + k * bd;
			if (d >= headDim) break;
			float a = acc[k] * corr;
			for (int jj = 0; jj < tile; jj++) a += ps[jj] * ld(vBase, rows[jj] * rowStride + d);
			acc[k] = a;
		}
		m = mNew;
		__syncthreads();  // ps and rows are rewritten by the next tile
	}
	if (sinks) {
		// The sink joins the denominator: rescale to max(m, sink).
		float mNew = fmaxf(m, sinks[h]), corr = expf(m - mNew);
		l = l * corr + expf(sinks[h] - mNew);
		for (int k = 0; k < ATTN_MAX_DIM_PER_THREAD; k++) acc[k] *= corr;
		m = mNew;
	}
	float* oRow = out + ((long long)t * nHead + h) * headDim;
	for (int k = 0; k < ATTN_MAX_DIM_PER_THREAD; k++) {
		int d = tid + k * bd;
		if (d < headDim) oRow[d] = acc[k] / l;
	}
	if (lse && tid == 0) lse[(long long)t * nHead + h] = m + logf(l);
}
GRPO_KERNEL void __launch_bounds__(128) attention_f32(float* out, float* lse, const float* q, const float* kCache, const float* vCache,
						      const int* seq, const int* pos, const int* table, int nTok, int nHead, int nKV,
						      int headDim, int blockSize, int maxBlocks, float scale, int window,
						      const float* sinks) {
	attention(out, lse, q, kCache, vCache, seq, pos, table, nHead, nKV, headDim, blockSize, maxBlocks, scale, window, sinks);
}
GRPO_KERNEL void __launch_bounds__(128) attention_bf16(float* out, float* lse, const float* q, const __nv_bfloat16* kCache,
						       const __nv_bfloat16* vCache, const int* seq, const int* pos, const int* table,
						       int nTok, int nHead, int nKV, int headDim, int blockSize, int maxBlocks,
						       float scale, int window, const float* sinks) {
	attention(out, lse, q, kCache, vCache, seq, pos, table, nHead, nKV, headDim, blockSize, maxBlocks, scale, window, sinks);
}
