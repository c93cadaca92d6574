// attention_flash_backward.cu: AttentionBackward in the FlashAttention-2
// shape, on tensor cores (wmma, bf16 operands, f32 accumulation) for a bf16
// KV cache (…_bf16), in f32 on the lanes for an f32 one (…_f32), with no
// atomics, so two runs give the same bits whatever order the blocks run
// in. Probabilities are recomputed from q, k and the forward's lse:
//
//	P = exp(scale·Q·Kᵀ − lse),  D = rowsum(dO ∘ O),  dP = dO·Vᵀ
//	dS = P ∘ (dP − D),  dV = Pᵀ·dO,  dK = scale·dSᵀ·Q,  dQ = scale·dS·K
//
// On the bf16 path Q, dO, P and dS are rounded to bf16 as tensor cores
// take them. Two passes over the same (token, head) rows as
// attention_flash.cu:
//
// attention_flash_dkdv_hd<HD>: grid (numBlocks · ⌈blockSize /
// FLASH_KEYS⌉, nKV), block FLASH_THREADS. A block owns up to FLASH_KEYS
// rows of one cache block and KV head (each warp 16 of them), so every
// element of dk and dv has exactly one writer. It finds the table entries
// that map its cache block (in table order: a prompt block shared by
// several sequences gets their gradients summed in that fixed order), and
// for each loops over the query tiles of FLASH_ROWS rows that contain a
// row of that sequence seeing one of its keys; dK and dV stay in
// accumulators for the whole loop and are added into dk, dv once at the
// end. Rows no queried position maps to are not touched.
//
// attention_flash_dq_hd<HD>: grid (⌈nTok·group / FLASH_ROWS⌉, nKV), the
// forward's tiling: a block owns FLASH_ROWS rows, loops over their
// sequences and key tiles, and writes dQ (overwritten) once.
//
// Under a sliding window (window > 0) a row sees keys attn_first(pos)..pos:
// the dK/dV pass skips query tiles whose rows' windows miss its keys, and
// cache blocks no window reaches; the dQ pass starts each sequence's key
// tiles at its rows' earliest first position. Sinks need nothing here:
// the forward's lse holds them (P is the forward's), the sink has no
// value, and the sinks are frozen.
// nvcc -ptx -arch=compute_80 attention_flash_backward.cu
#include "flash.cuh"

// dS = P·(dP − D): D is the softmax's own term of the Jacobian.
#ifdef GRPO_PLANT_NO_DELTA
#define FLASH_DS(p, dp, D) ((p) * (dp))  // test-only bug: drops D (kernels/emu planted_test.go)
#else
#define FLASH_DS(p, dp, D) ((p) * ((dp) - (D)))
#endif

// Shared regions of both passes, in bytes: two bf16 tiles of rows (q, dO),
// two of keys (k, v), two f32 score-shaped tiles (S, dP), two bf16 ones
// (P, dS) and per-row meta. The f32 stage for the epilogue (FLASH_ROWS ×
// HD or FLASH_KEYS × HD floats) reuses q and dO.
template <int HD, class T>
struct FlashBwdSmem {
	static const int q = 0;
	static const int dO = q + FLASH_ROWS * HD * sizeof(T);
	static const int k = dO + FLASH_ROWS * HD * sizeof(T);
	static const int v = k + FLASH_KEYS * HD * sizeof(T);
	static const int s = v + FLASH_KEYS * HD * sizeof(T);
	static const int dp = s + FLASH_ROWS * FLASH_KEYS * 4;
	static const int p = dp + FLASH_ROWS * FLASH_KEYS * 4;
	static const int ds = p + FLASH_ROWS * FLASH_KEYS * sizeof(T);
	static const int meta = ds + FLASH_ROWS * FLASH_KEYS * sizeof(T);  // int seq, pos, done; f32 lse, D; 4 ctl
	static const int stage = meta + (5 * FLASH_ROWS + 4) * 4;          // f32 64 × HD (bf16 path: reuses q, dO)
	static const int bytes = GRPO_SMEM_END(sizeof(T) == 4 ? stage + 64 * HD * 4 : stage);
	static const int stageAt = sizeof(T) == 4 ? stage : q;
};

// load_row_meta fills the per-row meta of rows r0..: sequence (−1 when
// invalid), position, lse and D = Σ_d dout·out, two threads per row.
__device__ __forceinline__ void load_row_meta(int* rowSeq, int* rowPos, float* rowLse, float* rowD, const float* dout,
					      const float* out, const float* lse, const int* seq, const int* pos,
					      int r0, int nRows, int group, int g, int nHead, int headDim) {
	static_assert(2 * FLASH_ROWS == FLASH_THREADS, "two threads per row");
	int r = threadIdx.x / 2, half = threadIdx.x % 2, R = r0 + r;
	bool valid = R < nRows;
	float part = 0.0f;
	if (valid) {
		long long at = row_offset(R, group, g, nHead, headDim);
		for (int d = half; d < headDim; d += 2) part += dout[at + d] * out[at + d];
	}
	part += __shfl_xor_sync(GRPO_FULL_MASK, part, 1);
	if (half == 0) {
		rowSeq[r] = valid ? seq[R / group] : -1;
		rowPos[r] = valid ? pos[R / group] : -1;
		rowLse[r] = valid ? lse[(long long)(R / group) * nHead + (long long)g * group + R % group] : 0.0f;
		rowD[r] = part;
	}
}

template <int HD, class T>
__device__ __forceinline__ void attention_flash_dkdv(float* dk, float* dv, const float* dout, const float* out,
						     const float* lse, const float* q, const T* kCache, const T* vCache,
						     const int* seq, const int* pos, const int* table, int blockSize,
						     int maxBlocks, int seqs, int nTok, int nHead, int nKV, int headDim,
						     float scale, int window) {
	typedef FlashBwdSmem<HD, T> L;
	GRPO_DYNAMIC_SHARED(unsigned char, smem);
	T* qs = (T*)(smem + L::q);
	T* dos = (T*)(smem + L::dO);
	T* ks = (T*)(smem + L::k);
	T* vs = (T*)(smem + L::v);
	float* st = (float*)(smem + L::s);    // Sᵀ: FLASH_KEYS × FLASH_ROWS
	float* dpt = (float*)(smem + L::dp);  // dPᵀ
	T* pt = (T*)(smem + L::p);
	T* dst = (T*)(smem + L::ds);
	int* rowSeq = (int*)(smem + L::meta);
	int* rowPos = rowSeq + FLASH_ROWS;
	float* rowLse = (float*)(rowPos + 2 * FLASH_ROWS);
	float* rowD = rowLse + FLASH_ROWS;
	int* ctl = (int*)(rowD + FLASH_ROWS);

	int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
	int tilesPerBlock = (blockSize + FLASH_KEYS - 1) / FLASH_KEYS;
	int blk = blockIdx.x / tilesPerBlock, row0 = blockIdx.x % tilesPerBlock * FLASH_KEYS, g = blockIdx.y;
	int nk = min(FLASH_KEYS, blockSize - row0);  // cache rows of this tile
	int group = nHead / nKV, nRows = nTok * group, width = nKV * headDim;

	Acc<T, HD> dK, dV;
	dK.zero();
	dV.zero();
	int written = 0;  // rows 0..written-1 of the tile are seen by some query
	for (int entry = 0;; entry++) {
		entry = paged_next_entry(table, entry, seqs * maxBlocks, blk, ctl);
		if (entry >= seqs * maxBlocks) break;
		int s, j0, first, last;
		if (!paged_entry_reach(entry, seq, pos, maxBlocks, blockSize, nTok, row0, nk, window, st, s, j0, first, last))
			continue;  // uniform
		written = max(written, last - j0 + 1);
		load_kv_tile<HD, T>(ks, kCache, table, blockSize, maxBlocks, s, j0, first, last, g, headDim, width);
		load_kv_tile<HD, T>(vs, vCache, table, blockSize, maxBlocks, s, j0, first, last, g, headDim, width);
		for (int r0 = 0; r0 < nRows; r0 += FLASH_ROWS) {
			__syncthreads();  // the previous tile's q, dO and meta are no longer read
			load_row_meta(rowSeq, rowPos, rowLse, rowD, dout, out, lse, seq, pos, r0, nRows, group, g, nHead,
				      headDim);
			__syncthreads();
			// Does any row of the tile see a key of this block?
			bool any = false;
			for (int r = 0; r < FLASH_ROWS; r++)
				any = any || (rowSeq[r] == s && rowPos[r] >= j0 && attn_first(rowPos[r], window) <= last);
			if (!any) continue;  // uniform
			load_rows<HD, T>(qs, q, r0, nRows, group, g, nHead, headDim);
			load_rows<HD, T>(dos, dout, r0, nRows, group, g, nHead, headDim);
			__syncthreads();
			// Sᵀ and dPᵀ of this warp's 16 keys against the tile's rows.
			rows_by_keys<HD>(st + 16 * warp * FLASH_ROWS, ks + 16 * warp * HD, qs);
			rows_by_keys<HD>(dpt + 16 * warp * FLASH_ROWS, vs + 16 * warp * HD, dos);
			__syncwarp();
			for (int e = lane; e < 16 * FLASH_ROWS; e += 32) {
				int c = 16 * warp + e / FLASH_ROWS, r = e % FLASH_ROWS, at = c * FLASH_ROWS + r;
				bool vis = rowSeq[r] == s && j0 + c <= rowPos[r] && j0 + c <= last &&
					   j0 + c >= attn_first(rowPos[r], window);
				float p = vis ? expf(st[at] * scale - rowLse[r]) : 0.0f;
				to_tile(pt + at, p);
				to_tile(dst + at, vis ? FLASH_DS(p, dpt[at], rowD[r]) : 0.0f);
			}
			__syncwarp();
			dV.template accumulate<FLASH_ROWS / 16>(pt + 16 * warp * FLASH_ROWS, FLASH_ROWS, dos);
			dK.template accumulate<FLASH_ROWS / 16>(dst + 16 * warp * FLASH_ROWS, FLASH_ROWS, qs);
		}
	}
	if (written == 0) return;  // uniform

	// Epilogue: stage each warp's 16 × HD through shared f32 and add it
	// into the cache-shaped gradients.
	float* stage = (float*)(smem + L::stageAt);
	long long base = ((long long)blk * blockSize + row0) * width + (long long)g * headDim;
	dK.scale(scale);
	dK.store(stage + 16 * warp * HD);
	__syncthreads();
	for (int i = tid; i < written * HD; i += blockDim.x)
		if (i % HD < headDim) dk[base + (long long)(i / HD) * width + i % HD] += stage[i];
	__syncthreads();
	dV.store(stage + 16 * warp * HD);
	__syncthreads();
	for (int i = tid; i < written * HD; i += blockDim.x)
		if (i % HD < headDim) dv[base + (long long)(i / HD) * width + i % HD] += stage[i];
}

template <int HD, class T>
__device__ __forceinline__ void attention_flash_dq(float* dq, const float* dout, const float* out, const float* lse,
						   const float* q, const T* kCache, const T* vCache, const int* seq,
						   const int* pos,
						   const int* table, int blockSize, int maxBlocks, int nTok, int nHead,
						   int nKV, int headDim, float scale, int window) {
	typedef FlashBwdSmem<HD, T> L;
	GRPO_DYNAMIC_SHARED(unsigned char, smem);
	T* qs = (T*)(smem + L::q);
	T* dos = (T*)(smem + L::dO);
	T* ks = (T*)(smem + L::k);
	T* vs = (T*)(smem + L::v);
	float* ss = (float*)(smem + L::s);    // S: FLASH_ROWS × FLASH_KEYS
	float* dps = (float*)(smem + L::dp);  // dP
	T* dss = (T*)(smem + L::ds);
	int* rowSeq = (int*)(smem + L::meta);
	int* rowPos = rowSeq + FLASH_ROWS;
	int* rowDone = rowPos + FLASH_ROWS;
	float* rowLse = (float*)(rowDone + FLASH_ROWS);
	float* rowD = rowLse + FLASH_ROWS;
	int* ctl = (int*)(rowD + FLASH_ROWS);

	int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
	int g = blockIdx.y, group = nHead / nKV, nRows = nTok * group, r0 = blockIdx.x * FLASH_ROWS;
	int width = nKV * headDim;
	load_rows<HD, T>(qs, q, r0, nRows, group, g, nHead, headDim);
	load_rows<HD, T>(dos, dout, r0, nRows, group, g, nHead, headDim);
	load_row_meta(rowSeq, rowPos, rowLse, rowD, dout, out, lse, seq, pos, r0, nRows, group, g, nHead, headDim);
	__syncthreads();
	for (int r = tid; r < FLASH_ROWS; r += blockDim.x) rowDone[r] = rowSeq[r] < 0;

	Acc<T, HD> dQ;
	dQ.zero();
	for (;;) {
		__syncthreads();
		if (tid == 0) {
			int s = -1, last = -1, first = 0x7fffffff;
			for (int r = 0; r < FLASH_ROWS; r++)
				if (!rowDone[r]) {
					if (s < 0) s = rowSeq[r];
					if (rowSeq[r] == s) {
						last = max(last, rowPos[r]);
						first = min(first, attn_first(rowPos[r], window));
					}
				}
			ctl[0] = s;
			ctl[1] = last;
			ctl[2] = first;
		}
		__syncthreads();
		int s = ctl[0], last = ctl[1], first = ctl[2];
		if (s < 0) break;
		for (int j0 = first; j0 <= last; j0 += FLASH_KEYS) {
			load_kv_tile<HD, T>(ks, kCache, table, blockSize, maxBlocks, s, j0, first, last, g, headDim, width);
			load_kv_tile<HD, T>(vs, vCache, table, blockSize, maxBlocks, s, j0, first, last, g, headDim, width);
			__syncthreads();
			rows_by_keys<HD>(ss + 16 * warp * FLASH_KEYS, qs + 16 * warp * HD, ks);
			rows_by_keys<HD>(dps + 16 * warp * FLASH_KEYS, dos + 16 * warp * HD, vs);
			__syncwarp();
			for (int e = lane; e < 16 * FLASH_KEYS; e += 32) {
				int r = 16 * warp + e / FLASH_KEYS, c = e % FLASH_KEYS, at = r * FLASH_KEYS + c;
				bool vis = rowSeq[r] == s && !rowDone[r] && j0 + c <= rowPos[r] &&
					   j0 + c >= attn_first(rowPos[r], window);
				float p = vis ? expf(ss[at] * scale - rowLse[r]) : 0.0f;
				to_tile(dss + at, vis ? FLASH_DS(p, dps[at], rowD[r]) : 0.0f);
			}
			__syncwarp();
			dQ.template accumulate<FLASH_KEYS / 16>(dss + 16 * warp * FLASH_KEYS, FLASH_KEYS, ks);
			__syncthreads();  // ks, vs are refilled by the next tile
		}
		for (int r = tid; r < FLASH_ROWS; r += blockDim.x)
			if (rowSeq[r] == s) rowDone[r] = 1;
	}

	float* stage = (float*)(smem + L::stageAt);  // bf16: q and dO are no longer read
	dQ.scale(scale);
	dQ.store(stage + 16 * warp * HD);
	__syncthreads();
	for (int i = tid; i < FLASH_ROWS * HD; i += blockDim.x) {
		int r = i / HD, d = i % HD;
		if (r0 + r < nRows && d < headDim) dq[row_offset(r0 + r, group, g, nHead, headDim) + d] = stage[i];
	}
}

#define ATTENTION_FLASH_BACKWARD(HD, T, suffix)                                                                 \
	GRPO_KERNEL void __launch_bounds__(FLASH_THREADS) attention_flash_dkdv_hd##HD##_##suffix(                    \
	    float* dk, float* dv, const float* dout, const float* out, const float* lse, const float* q,             \
	    const T* kCache, const T* vCache, const int* seq, const int* pos, const int* table, int blockSize,        \
	    int maxBlocks, int seqs, int nTok, int nHead, int nKV, int headDim, float scale, int window) {            \
		attention_flash_dkdv<HD, T>(dk, dv, dout, out, lse, q, kCache, vCache, seq, pos, table, blockSize,   \
					    maxBlocks, seqs, nTok, nHead, nKV, headDim, scale, window);               \
	}                                                                                                             \
	GRPO_KERNEL void __launch_bounds__(FLASH_THREADS) attention_flash_dq_hd##HD##_##suffix(                      \
	    float* dq, const float* dout, const float* out, const float* lse, const float* q, const T* kCache,        \
	    const T* vCache, const int* seq, const int* pos, const int* table, int blockSize, int maxBlocks, int nTok, \
	    int nHead, int nKV, int headDim, float scale, int window) {                                               \
		attention_flash_dq<HD, T>(dq, dout, out, lse, q, kCache, vCache, seq, pos, table, blockSize,         \
					  maxBlocks, nTok, nHead, nKV, headDim, scale, window);                       \
	}
ATTENTION_FLASH_BACKWARD(16, __nv_bfloat16, bf16)
ATTENTION_FLASH_BACKWARD(32, __nv_bfloat16, bf16)
ATTENTION_FLASH_BACKWARD(64, __nv_bfloat16, bf16)
ATTENTION_FLASH_BACKWARD(128, __nv_bfloat16, bf16)
ATTENTION_FLASH_BACKWARD(16, float, f32)
ATTENTION_FLASH_BACKWARD(32, float, f32)
ATTENTION_FLASH_BACKWARD(64, float, f32)
ATTENTION_FLASH_BACKWARD(128, float, f32)
