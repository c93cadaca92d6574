// attention_flash.cu: Attention for prefill and training, flash style, on
// tensor cores (wmma: bf16 operands, f32 accumulation) when the KV cache is
// bf16 (kernels named …_bf16), in f32 on the lanes when it is f32 (…_f32): the scores of a
// row are never stored whole; a running max m, sum l and output o are
// rescaled as each key tile arrives, and the lse (m + log l) is written
// for the backward pass (attention_flash_backward.cu).
//
// Launch: grid (ceil(nTok·group / FLASH_ROWS), nKV), block FLASH_THREADS,
// dynamic shared memory attention_flash_smem(HD) bytes. A block takes
// FLASH_ROWS (token, head) rows of KV head g (flash.cuh). Its tokens may
// belong to several sequences (packed batches): the block handles one
// sequence at a time — the sequence of its first row not yet done, up to
// the largest position any of its rows in that sequence has — and masks
// the scores of the other rows, so each row sees exactly the keys 0..pos
// of its own sequence. Per key tile:
//   S = Q·Kᵀ (each warp its 16 rows × FLASH_KEYS, into shared f32);
//   two lanes per row find the tile's max and sum, write P = exp(S·scale −
//   m) as bf16 and rescale their half of the row's o (held in registers,
//   in the lanes' own layout, not a fragment's);
//   PV = P·V (into shared f32), which those lanes add to o.
// On the bf16 path Q and P are rounded to bf16 as tensor cores take them.
// Variants (kernels.AttentionVariant): under a sliding window (window > 0)
// a row sees keys attn_first(pos)..pos, and a sequence's key tiles start
// at the earliest first position of the block's rows in it — the tiles
// and cache blocks before are never read; sinks (one logit per query
// head, or null) join each row's l after its last tile, and the lse.
// nvcc -ptx -arch=compute_80 attention_flash.cu
#include "flash.cuh"

// Whether key position j is visible to a query at position p.
#ifdef GRPO_PLANT_OFF_BY_ONE
#define FLASH_VISIBLE(j, p) ((j) < (p))  // test-only bug: drops the diagonal (kernels/emu planted_test.go)
#else
#define FLASH_VISIBLE(j, p) ((j) <= (p))
#endif

// Offsets of the shared regions, in bytes.
template <int HD, class T>
struct FlashFwdSmem {
	static const int q = 0;                                 // T FLASH_ROWS × HD
	static const int k = q + FLASH_ROWS * HD * sizeof(T);   // T FLASH_KEYS × HD
	static const int v = k + FLASH_KEYS * HD * sizeof(T);   // T FLASH_KEYS × HD
	static const int s = v + FLASH_KEYS * HD * sizeof(T);   // f32 FLASH_ROWS × FLASH_KEYS
	static const int p = s + FLASH_ROWS * FLASH_KEYS * 4;   // T FLASH_ROWS × FLASH_KEYS
	static const int pv = p + FLASH_ROWS * FLASH_KEYS * sizeof(T);  // f32 FLASH_ROWS × HD
	static const int meta = pv + FLASH_ROWS * HD * 4;       // int: seq, pos, done per row; 3 ctl
	static const int bytes = GRPO_SMEM_END(meta + (3 * FLASH_ROWS + 3) * 4);
};

template <int HD, class T>
__device__ __forceinline__ void attention_flash(float* out, float* lse, const float* q, const T* kCache, const T* vCache, const int* seq, const int* pos,
						const int* table, int blockSize, int maxBlocks, int nTok, int nHead,
						int nKV, int headDim, float scale, int window, const float* sinks) {
	typedef FlashFwdSmem<HD, T> L;
	GRPO_DYNAMIC_SHARED(unsigned char, smem);
	T* qs = (T*)(smem + L::q);
	T* ks = (T*)(smem + L::k);
	T* vs = (T*)(smem + L::v);
	float* ss = (float*)(smem + L::s);
	T* ps = (T*)(smem + L::p);
	float* pvs = (float*)(smem + L::pv);
	int* rowSeq = (int*)(smem + L::meta);
	int* rowPos = rowSeq + FLASH_ROWS;
	int* rowDone = rowPos + FLASH_ROWS;
	int* ctl = rowDone + FLASH_ROWS;

	int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
	int g = blockIdx.y, group = nHead / nKV, nRows = nTok * group, r0 = blockIdx.x * FLASH_ROWS;
	int width = nKV * headDim;
	load_rows<HD, T>(qs, q, r0, nRows, group, g, nHead, headDim);
	for (int r = tid; r < FLASH_ROWS; r += blockDim.x) {
		bool valid = r0 + r < nRows;
		rowSeq[r] = valid ? seq[(r0 + r) / group] : -1;
		rowPos[r] = valid ? pos[(r0 + r) / group] : -1;
		rowDone[r] = !valid;
	}

	// This lane's row (of the warp's 16) and half of its keys and dims.
	int row = 16 * warp + lane / 2, half = lane % 2;
	float m = -INFINITY, l = 0.0f, o[HD / 2];
	for (int i = 0; i < HD / 2; i++) o[i] = 0.0f;

	for (;;) {
		__syncthreads();  // rows' meta written (first pass) or marked done
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
		bool mine = rowSeq[row] == s && !rowDone[row];
		int myPos = rowPos[row], myFirst = attn_first(myPos, window);
		for (int j0 = first; j0 <= last; j0 += FLASH_KEYS) {
			load_kv_tile<HD, T>(ks, kCache, table, blockSize, maxBlocks, s, j0, first, last, g, headDim, width);
			load_kv_tile<HD, T>(vs, vCache, table, blockSize, maxBlocks, s, j0, first, last, g, headDim, width);
			__syncthreads();
			rows_by_keys<HD>(ss + 16 * warp * FLASH_KEYS, qs + 16 * warp * HD, ks);
			__syncwarp();
			// Online softmax over this lane's half of the row's tile.
			float* sr = ss + row * FLASH_KEYS + half * (FLASH_KEYS / 2);
			float tileMax = -INFINITY;
			for (int c = 0; c < FLASH_KEYS / 2; c++) {
				int key = j0 + half * (FLASH_KEYS / 2) + c;
				float x = mine && FLASH_VISIBLE(key, myPos) && key >= myFirst ? sr[c] * scale : -INFINITY;
				sr[c] = x;
				tileMax = fmaxf(tileMax, x);
			}
			tileMax = fmaxf(tileMax, __shfl_xor_sync(GRPO_FULL_MASK, tileMax, 1));
			float mNew = fmaxf(m, tileMax);
			// A row with no visible key in the tile (not this sequence, or
			// its position before j0) keeps m, l and o: p = 0, corr = 1.
			float corr = mNew == -INFINITY ? 1.0f : expf(m - mNew), sum = 0.0f;
			T* pr = ps + row * FLASH_KEYS + half * (FLASH_KEYS / 2);
			for (int c = 0; c < FLASH_KEYS / 2; c++) {
				float p = sr[c] == -INFINITY ? 0.0f : expf(sr[c] - mNew);
				sum += p;
				to_tile(pr + c, p);
			}
			sum += __shfl_xor_sync(GRPO_FULL_MASK, sum, 1);
			l = l * corr + sum;
			m = mNew;
			__syncwarp();
			Acc<T, HD> pv;
			pv.zero();
			pv.template accumulate<FLASH_KEYS / 16>(ps + 16 * warp * FLASH_KEYS, FLASH_KEYS, vs);
			pv.store(pvs + 16 * warp * HD);
			__syncwarp();
			const float* pvr = pvs + row * HD + half * (HD / 2);
			for (int i = 0; i < HD / 2; i++) o[i] = o[i] * corr + pvr[i];
			__syncthreads();  // ks, vs are refilled by the next tile
		}
		for (int r = tid; r < FLASH_ROWS; r += blockDim.x)
			if (rowSeq[r] == s) rowDone[r] = 1;
	}

	int r = r0 + row;
	if (r < nRows && sinks) {
		// The sink joins the denominator: rescale to max(m, sink).
		float sk = sinks[g * group + r % group], mNew = fmaxf(m, sk), corr = expf(m - mNew);
		l = l * corr + expf(sk - mNew);
		for (int i = 0; i < HD / 2; i++) o[i] *= corr;
		m = mNew;
	}
	if (r < nRows) {
		float* orow = out + row_offset(r, group, g, nHead, headDim);
		for (int i = 0; i < HD / 2; i++) {
			int d = half * (HD / 2) + i;
			if (d < headDim) orow[d] = o[i] / l;
		}
		if (lse && half == 0) lse[(long long)(r / group) * nHead + (long long)g * group + r % group] = m + logf(l);
	}
}

#define ATTENTION_FLASH(HD, T, suffix)                                                                          \
	GRPO_KERNEL void __launch_bounds__(FLASH_THREADS)                                                       \
	    attention_flash_hd##HD##_##suffix(float* out, float* lse, const float* q, const T* kCache,          \
					      const T* vCache, const int* seq, const int* pos, const int* table, \
					      int blockSize, int maxBlocks, int nTok, int nHead, int nKV,       \
					      int headDim, float scale, int window, const float* sinks) {       \
		attention_flash<HD, T>(out, lse, q, kCache, vCache, seq, pos, table, blockSize, maxBlocks, nTok,  \
				       nHead, nKV, headDim, scale, window, sinks);                                \
	}
ATTENTION_FLASH(16, __nv_bfloat16, bf16)
ATTENTION_FLASH(32, __nv_bfloat16, bf16)
ATTENTION_FLASH(64, __nv_bfloat16, bf16)
ATTENTION_FLASH(128, __nv_bfloat16, bf16)
ATTENTION_FLASH(16, float, f32)
ATTENTION_FLASH(32, float, f32)
ATTENTION_FLASH(64, float, f32)
ATTENTION_FLASH(128, float, f32)
