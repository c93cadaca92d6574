// attention_decode.cu: Attention for decode, split-KV flash-decoding over
// the paged cache (bf16: …_bf16, or f32: …_f32) with f32 accumulation.
//
// attention_decode_dpl<N>_<kv>: grid (nTok, nKV·chunks, nSplit), block
// DECODE_THREADS. A block takes token t, KV head g, up to DECODE_HEADS of
// the group's query heads (chunk c of ⌈group / DECODE_HEADS⌉) and split z:
// the keys [z·splitLen, (z+1)·splitLen) ∩ [0, pos[t]]. Each K and V row is
// read once for all those heads (GQA), by one warp, its 32 lanes holding
// N dims each (dims d = lane + 32·i: a row is one coalesced read). The warp
// keeps, per head, a running max, sum and output (online softmax); the
// block's warps are merged through shared memory. With one split the block
// writes out and lse itself; otherwise it writes its partial (max, sum,
// unnormalised output) and attention_decode_combine merges the splits.
// Under a sliding window (window > 0) the splits cover the window,
// [attn_first(pos), pos], not the whole cache: the host sizes nSplit for
// min(maxLen, window) keys. Sinks (one logit per query head, or null) join
// the denominator once, where a row's result is final: in the tile with
// one split, in attention_decode_combine otherwise.
// nvcc -ptx -arch=compute_80 attention_decode.cu
#include "flash.cuh"

#define DECODE_WARPS 4
#define DECODE_THREADS (32 * DECODE_WARPS)
#define DECODE_HEADS 8
#define DECODE_UNROLL 4
// DECODE_UNROLL_LOOP unrolls the loops over those rows, so they live in
// registers (nvcc: 161 registers at 4 dims a lane, no spills); the
// emulator's host compiler takes the loops as they are.
#ifdef __CUDACC__
#define DECODE_UNROLL_LOOP _Pragma("unroll")
#else
#define DECODE_UNROLL_LOOP
#endif

// part layout: for row (t, h) and slot z of slots, pm/pl[(t·nHead + h)·slots
// + z] and po[((t·nHead + h)·slots + z)·headDim + d]. Plain decoding has
// one slot per split; the shared-prefix kernels two (the suffix pass's
// split z at z, the prefix pass's at nSplit + z).
//
// attention_decode_tile: one block's work, up to DECODE_HEADS (token, head)
// pairs of one KV head g reading the keys [from, to) of table row s. Pair
// hh is number base + hh of the pairs (first + p / group, g·group + p %
// group): for plain decoding the chunk's heads of token first, for a
// shared prefix the group's members × heads, so each K and V row read
// serves all of them. With slots == 1 the block writes out and lse. Under
// a window each pair skips the keys before its own first position, and
// the block starts at the earliest.
template <int N, class T>
__device__ __forceinline__ void attention_decode_tile(float* out, float* lse, float* pm, float* pl, float* po,
						      const float* q, const T* kCache, const T* vCache,
						      const int* table, int s, int from, int to, int first,
						      int base, int nh, int g, int slots, int slot, int blockSize,
						      int maxBlocks, int nHead, int nKV, int headDim, float scale,
						      const int* pos, int window, const float* sinks) {
	GRPO_DYNAMIC_SHARED(float, smem);
	int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
	int group = nHead / nKV;
	int width = nKV * headDim;

	float qr[DECODE_HEADS][N], acc[DECODE_HEADS][N], m[DECODE_HEADS], l[DECODE_HEADS];
	int lo[DECODE_HEADS], minLo = 0x7fffffff;
	for (int hh = 0; hh < DECODE_HEADS; hh++) {
		m[hh] = -INFINITY;
		l[hh] = 0.0f;
		int p = base + hh;
		lo[hh] = hh < nh ? attn_first(pos[first + p / group], window) : 0;
		if (hh < nh) minLo = min(minLo, lo[hh]);
		long long row = (long long)(first + p / group) * nHead + g * group + p % group;
		for (int i = 0; i < N; i++) {
			int d = lane + 32 * i;
			qr[hh][i] = hh < nh && d < headDim ? q[row * headDim + d] : 0.0f;
			acc[hh][i] = 0.0f;
		}
	}
	from = max(from, minLo);
	// A warp's keys are j, j + DECODE_WARPS, …; it loads DECODE_UNROLL of
	// them (their table entries, then their K and V rows) before using
	// any, so that many rows are in flight per warp instead of one behind
	// a dependent table read: a decode step is bound by these reads (the
	// H100 lease: 28 % of the measured bandwidth with one row at a time).
	// The keys are still used in the same order, so the result's bits do
	// not change.
	for (int j0 = from + warp; j0 < to; j0 += DECODE_UNROLL * DECODE_WARPS) {
		float k[DECODE_UNROLL][N], v[DECODE_UNROLL][N];
		DECODE_UNROLL_LOOP
		for (int u = 0; u < DECODE_UNROLL; u++) {
			int j = j0 + u * DECODE_WARPS;
			long long at = j < to ? kv_row(table, s, j, blockSize, maxBlocks) * width + (long long)g * headDim : 0;
			for (int i = 0; i < N; i++) {
				int d = lane + 32 * i;
				k[u][i] = j < to && d < headDim ? ld(kCache, at + d) : 0.0f;
				v[u][i] = j < to && d < headDim ? ld(vCache, at + d) : 0.0f;
			}
		}
		DECODE_UNROLL_LOOP
		for (int u = 0; u < DECODE_UNROLL; u++) {
			int j = j0 + u * DECODE_WARPS;
			if (j >= to) break;  // the same for every lane of the warp
			for (int hh = 0; hh < DECODE_HEADS; hh++) {
				if (hh >= nh || j < lo[hh]) continue;  // constant trip count: qr, acc, m, l stay in registers
				float dot = 0.0f;
				for (int i = 0; i < N; i++) dot += qr[hh][i] * k[u][i];
				float x = warp_sum(dot) * scale;
				float mNew = fmaxf(m[hh], x);
				float corr = expf(m[hh] - mNew), p = expf(x - mNew);  // corr = 0 on the first key (m = −Inf)
				l[hh] = l[hh] * corr + p;
				for (int i = 0; i < N; i++) acc[hh][i] = acc[hh][i] * corr + p * v[u][i];
				m[hh] = mNew;
			}
		}
	}

	// Merge the warps: smem holds, per warp and head, m, l and N·32 dims.
	const int stride = 2 + 32 * N;
	for (int hh = 0; hh < DECODE_HEADS; hh++) {
		if (hh >= nh) continue;
		float* w = smem + (warp * DECODE_HEADS + hh) * stride;
		if (lane == 0) {
			w[0] = m[hh];
			w[1] = l[hh];
		}
		for (int i = 0; i < N; i++) w[2 + lane + 32 * i] = acc[hh][i];
	}
	__syncthreads();
	for (int i = tid; i < nh * headDim; i += blockDim.x) {
		int hh = i / headDim, d = i % headDim;
		float M = -INFINITY;
		for (int w = 0; w < DECODE_WARPS; w++) M = fmaxf(M, smem[(w * DECODE_HEADS + hh) * stride]);
		float L = 0.0f, A = 0.0f;
		for (int w = 0; w < DECODE_WARPS; w++) {
			const float* x = smem + (w * DECODE_HEADS + hh) * stride;
			if (x[0] == -INFINITY) continue;  // a warp that saw no key
			float f = expf(x[0] - M);
			L += x[1] * f;
			A += x[2 + d] * f;
		}
		int p = base + hh;
		long long row = (long long)(first + p / group) * nHead + g * group + p % group;
		if (slots == 1) {
			if (sinks) {
				// The sink joins the denominator: rescale to max(M, sink).
				float sk = sinks[row % nHead], MN = fmaxf(M, sk), corr = expf(M - MN);
				L = L * corr + expf(sk - MN);
				A *= corr;
				M = MN;
			}
			out[row * headDim + d] = A / L;
			if (lse && d == 0) lse[row] = M + logf(L);
		} else {
			long long pr = row * slots + slot;
			po[pr * headDim + d] = A;
			if (d == 0) {
				pm[pr] = M;
				pl[pr] = L;
			}
		}
	}
}

template <int N, class T>
__device__ __forceinline__ void attention_decode(float* out, float* lse, float* pm, float* pl, float* po,
						 const float* q, const T* kCache, const T* vCache,
						 const int* seq, const int* pos, const int* table, int blockSize,
						 int maxBlocks, int nTok, int nHead, int nKV, int headDim, int splitLen,
						 float scale, int window, const float* sinks) {
	int group = nHead / nKV, chunks = (group + DECODE_HEADS - 1) / DECODE_HEADS;
	int t = blockIdx.x, g = blockIdx.y / chunks, c = blockIdx.y % chunks, z = blockIdx.z;
	int from = attn_first(pos[t], window) + z * splitLen, to = min(pos[t] + 1, from + splitLen);
	attention_decode_tile<N, T>(out, lse, pm, pl, po, q, kCache, vCache, table, seq[t], from, to, t,
				    c * DECODE_HEADS, min(DECODE_HEADS, group - c * DECODE_HEADS), g, gridDim.z, z,
				    blockSize, maxBlocks, nHead, nKV, headDim, scale, pos, window, sinks);
}

// attention_prefix_dpl<N>_<kv> and attention_suffix_dpl<N>_<kv>:
// AttentionSharedPrefix's two passes, grid (nTok, nKV·chunks, nSplit) as
// attention_decode's, writing partials in 2·nSplit slots per row that
// attention_decode_combine merges. groups holds {first, members,
// sharedBlocks} per token (kernels.PrefixGroupWords). The suffix pass is
// attention_decode over the keys past the token's shared blocks. In the
// prefix pass, block (t, (g, c), z) takes, if t is member k of its group,
// tile k·chunks + c of the group's ⌈members·group / DECODE_HEADS⌉ tiles
// of (member, head) pairs, and reads split z of the shared keys once
// from the first member's table row; a block past the tiles returns.
// A token in no group has no shared keys: its prefix tiles write empty
// partials (max −Inf). Under a window, shared keys before every member's
// window are not read, and each member skips those before its own.
template <int N, class T>
__device__ __forceinline__ void attention_prefix(float* pm, float* pl, float* po, const float* q,
						 const T* kCache, const T* vCache, const int* seq,
						 const int* pos, const int* groups, const int* table, int blockSize,
						 int maxBlocks, int nHead, int nKV, int headDim, int splitLen, float scale,
						 int window) {
	int group = nHead / nKV, chunks = (group + DECODE_HEADS - 1) / DECODE_HEADS;
	int t = blockIdx.x, g = blockIdx.y / chunks, c = blockIdx.y % chunks, z = blockIdx.z, nSplit = gridDim.z;
	int first = groups[3 * t], members = groups[3 * t + 1], shared = groups[3 * t + 2] * blockSize;
	int tile = (t - first) * chunks + c, pairs = members * group;
	if (tile * DECODE_HEADS >= pairs) return;
	int from = z * splitLen, to = min(shared, from + splitLen);
#ifdef GRPO_PLANT_WRONG_PREFIX_ROW
	int s = seq[0];  // planted: every group reads the first token's prompt
#else
	int s = seq[first];
#endif
	attention_decode_tile<N, T>(nullptr, nullptr, pm, pl, po, q, kCache, vCache, table, s, from, to, first,
				    tile * DECODE_HEADS, min(DECODE_HEADS, pairs - tile * DECODE_HEADS), g, 2 * nSplit,
				    nSplit + z, blockSize, maxBlocks, nHead, nKV, headDim, scale, pos, window, nullptr);
}

template <int N, class T>
__device__ __forceinline__ void attention_suffix(float* pm, float* pl, float* po, const float* q, const T* kCache,
						 const T* vCache, const int* seq, const int* pos, const int* groups,
						 const int* table, int blockSize, int maxBlocks, int nHead, int nKV,
						 int headDim, int splitLen, float scale, int window) {
	int group = nHead / nKV, chunks = (group + DECODE_HEADS - 1) / DECODE_HEADS;
	int t = blockIdx.x, g = blockIdx.y / chunks, c = blockIdx.y % chunks, z = blockIdx.z;
	int from = max(z * splitLen, groups[3 * t + 2] * blockSize), to = min(pos[t] + 1, z * splitLen + splitLen);
	attention_decode_tile<N, T>(nullptr, nullptr, pm, pl, po, q, kCache, vCache, table, seq[t], from, to, t,
				    c * DECODE_HEADS, min(DECODE_HEADS, group - c * DECODE_HEADS), g, 2 * gridDim.z, z,
				    blockSize, maxBlocks, nHead, nKV, headDim, scale, pos, window, nullptr);
}

#define ATTENTION_DECODE(N, T, suffix)                                                                          \
	GRPO_KERNEL void __launch_bounds__(DECODE_THREADS) attention_decode_dpl##N##_##suffix(                      \
	    float* out, float* lse, float* pm, float* pl, float* po, const float* q, const T* kCache, const T* vCache, \
	    const int* seq, const int* pos, const int* table, int blockSize, int maxBlocks, int nTok, int nHead,      \
	    int nKV, int headDim, int splitLen, float scale, int window, const float* sinks) {                       \
		attention_decode<N, T>(out, lse, pm, pl, po, q, kCache, vCache, seq, pos, table, blockSize, maxBlocks, \
				       nTok, nHead, nKV, headDim, splitLen, scale, window, sinks);                     \
	}
ATTENTION_DECODE(1, __nv_bfloat16, bf16)
ATTENTION_DECODE(2, __nv_bfloat16, bf16)
ATTENTION_DECODE(3, __nv_bfloat16, bf16)
ATTENTION_DECODE(4, __nv_bfloat16, bf16)
ATTENTION_DECODE(1, float, f32)
ATTENTION_DECODE(2, float, f32)
ATTENTION_DECODE(3, float, f32)
ATTENTION_DECODE(4, float, f32)

#define ATTENTION_SHARED_PREFIX(N, T, suffix)                                                                   \
	GRPO_KERNEL void __launch_bounds__(DECODE_THREADS) attention_prefix_dpl##N##_##suffix(                      \
	    float* pm, float* pl, float* po, const float* q, const T* kCache, const T* vCache, const int* seq,        \
	    const int* pos, const int* groups, const int* table, int blockSize, int maxBlocks, int nHead, int nKV,  \
	    int headDim, int splitLen, float scale, int window) {                                                 \
		attention_prefix<N, T>(pm, pl, po, q, kCache, vCache, seq, pos, groups, table, blockSize, maxBlocks,   \
				       nHead, nKV, headDim, splitLen, scale, window);                                 \
	}                                                                                                         \
	GRPO_KERNEL void __launch_bounds__(DECODE_THREADS) attention_suffix_dpl##N##_##suffix(                      \
	    float* pm, float* pl, float* po, const float* q, const T* kCache, const T* vCache, const int* seq,        \
	    const int* pos, const int* groups, const int* table, int blockSize, int maxBlocks, int nHead, int nKV,  \
	    int headDim, int splitLen, float scale, int window) {                                                 \
		attention_suffix<N, T>(pm, pl, po, q, kCache, vCache, seq, pos, groups, table, blockSize, maxBlocks,   \
				       nHead, nKV, headDim, splitLen, scale, window);                                 \
	}
ATTENTION_SHARED_PREFIX(1, __nv_bfloat16, bf16)
ATTENTION_SHARED_PREFIX(2, __nv_bfloat16, bf16)
ATTENTION_SHARED_PREFIX(3, __nv_bfloat16, bf16)
ATTENTION_SHARED_PREFIX(4, __nv_bfloat16, bf16)
ATTENTION_SHARED_PREFIX(1, float, f32)
ATTENTION_SHARED_PREFIX(2, float, f32)
ATTENTION_SHARED_PREFIX(3, float, f32)
ATTENTION_SHARED_PREFIX(4, float, f32)

// attention_decode_combine: grid (nTok·nHead), block DECODE_THREADS (over
// dims). Merges a row's nSplit partials; a split with no key (past the
// token's position) has max −Inf and weight 0. A row's sink (sinks not
// null; row = t·nHead + h) joins as one more partial with no value.
GRPO_KERNEL void __launch_bounds__(DECODE_THREADS)
    attention_decode_combine(float* out, float* lse, const float* pm, const float* pl, const float* po, int nSplit,
			     int headDim, const float* sinks, int nHead) {
	long long row = blockIdx.x;
	const float* m = pm + row * nSplit;
	const float* l = pl + row * nSplit;
	float M = -INFINITY;
	for (int z = 0; z < nSplit; z++) M = fmaxf(M, m[z]);
	if (sinks) M = fmaxf(M, sinks[row % nHead]);
	float L = 0.0f;
	for (int z = 0; z < nSplit; z++)
		if (m[z] != -INFINITY) L += l[z] * expf(m[z] - M);
	if (sinks) L += expf(sinks[row % nHead] - M);
	for (int d = threadIdx.x; d < headDim; d += blockDim.x) {
		float A = 0.0f;
		for (int z = 0; z < nSplit; z++)
			if (m[z] != -INFINITY) A += po[(row * nSplit + z) * headDim + d] * expf(m[z] - M);
		out[row * headDim + d] = A / L;
	}
	if (lse && threadIdx.x == 0) lse[row] = M + logf(L);
}
