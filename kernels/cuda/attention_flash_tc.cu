// attention_flash_tc.cu: Attention for prefill and training over bf16 q,
// K and V caches on tensor cores (mma.sync m16n8k16, bf16 operands, f32
// accumulation; flash_tc.cuh), FlashAttention-2's forward: the scores of
// a row are never stored; a running max m, sum l and output o (all f32,
// in registers) are rescaled as each key tile arrives, and the lse
// (m + log l) is written for the backward pass
// (attention_flash_tc_backward.cu). The probabilities are rounded to bf16
// as the P·V product takes them; everything else stays f32. out is f32,
// or bf16 (outBF16: each output rounded once, at the store). Runs when q
// and the caches are BF16 (kernels/cuda/attention_flash_tc.go); f32
// operands keep attention_flash.cu.
//
// Launch: grid (⌈nTok·group / FTC_ROWS⌉, nKV), block FTC_THREADS, dynamic
// shared memory FtcFwdSmem<HD>::bytes. A block takes FTC_ROWS (token,
// query head) rows of KV head g, 16 per warp, so a K/V tile is read once
// for the group's query heads (GQA). As in attention_flash.cu a block's
// rows may belong to several sequences (packed batches): it handles one
// sequence at a time, keys first..last (the earliest window start and the
// largest position of its rows in it), and masks the other rows' scores.
//
// Loads are staged with cp.async in FlashAttention-2's order: K and V of a
// tile are two commit groups; the next tile's K is issued once every warp
// has finished Q·Kᵀ and lands during the softmax and P·V, the next V once
// P·V is done and lands during the next Q·Kᵀ. Sliding windows and sinks
// (kernels.AttentionVariant) as in attention_flash.cu: a row sees keys
// attn_first(pos)..pos; the sink joins l after the last tile.
// nvcc -ptx -arch=compute_80 attention_flash_tc.cu
#include "flash_tc.cuh"

// Offsets of the shared regions, in bytes (every tile 16-byte aligned).
template <int HD>
struct FtcFwdSmem {
	static const int kt = ftc_keys(HD);
	static const int q = 0;                                 // bf16 FTC_ROWS × FTC_LD(HD)
	static const int k = q + FTC_ROWS * FTC_LD(HD) * 2;     // bf16 kt × FTC_LD(HD)
	static const int v = k + kt * FTC_LD(HD) * 2;           // bf16 kt × FTC_LD(HD)
	static const int meta = v + kt * FTC_LD(HD) * 2;        // int: seq, pos, done per row; 3 ctl
	static const int bytes = GRPO_SMEM_END(meta + (3 * FTC_ROWS + 3) * 4);
};

template <int HD>
__device__ __forceinline__ void attention_flash_tc(void* out, float* lse, const __nv_bfloat16* q, const __nv_bfloat16* kCache,
						   const __nv_bfloat16* vCache, const int* seq, const int* pos, const int* table,
						   int blockSize, int maxBlocks, int nTok, int nHead, int nKV, int headDim,
						   float scale, int window, const float* sinks, int outBF16) {
	typedef FtcFwdSmem<HD> L;
	const int KT = L::kt, LD = FTC_LD(HD);
	GRPO_DYNAMIC_SHARED(unsigned char, smem);
	__nv_bfloat16* qs = (__nv_bfloat16*)(smem + L::q);
	__nv_bfloat16* ks = (__nv_bfloat16*)(smem + L::k);
	__nv_bfloat16* vs = (__nv_bfloat16*)(smem + L::v);
	int* rowSeq = (int*)(smem + L::meta);
	int* rowPos = rowSeq + FTC_ROWS;
	int* rowDone = rowPos + FTC_ROWS;
	int* ctl = rowDone + FTC_ROWS;

	int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
	int g = blockIdx.y, group = nHead / nKV, nRows = nTok * group, r0 = blockIdx.x * FTC_ROWS;
	int width = nKV * headDim;
	ftc_load_rows<HD>(qs, FTC_ROWS, q, r0, nRows, group, g, nHead, headDim);
	cp_async_commit();
	for (int r = tid; r < FTC_ROWS; r += blockDim.x) {
		bool valid = r0 + r < nRows;
		rowSeq[r] = valid ? seq[(r0 + r) / group] : -1;
		rowPos[r] = valid ? pos[(r0 + r) / group] : -1;
		rowDone[r] = !valid;
	}
	cp_async_wait<0>();

	// This lane's two rows of its warp's 16: i = 0 row 16w + lane/4, i = 1
	// eight below; its accumulator columns are 2·(lane%4) and +1 of each
	// 8-wide tile.
	const __nv_bfloat16* qw = qs + 16 * warp * LD;
	int myRow[2] = {16 * warp + lane / 4, 16 * warp + lane / 4 + 8};
	float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
	float o[HD / 8][4];
	for (int n = 0; n < HD / 8; n++)
		for (int i = 0; i < 4; i++) o[n][i] = 0.0f;

	for (;;) {
		__syncthreads();  // rows' meta written (first pass) or marked done
		if (tid == 0) {
			int s = -1, last = -1, first = 0x7fffffff;
			for (int r = 0; r < FTC_ROWS; r++)
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
		bool mine[2];
		int myPos[2], myFirst[2];
		for (int i = 0; i < 2; i++) {
			mine[i] = rowSeq[myRow[i]] == s && !rowDone[myRow[i]];
			myPos[i] = rowPos[myRow[i]];
			myFirst[i] = attn_first(myPos[i], window);
		}
		ftc_load_kv<HD>(ks, KT, kCache, table, blockSize, maxBlocks, s, first, first, last, g, headDim, width);
		cp_async_commit();
		ftc_load_kv<HD>(vs, KT, vCache, table, blockSize, maxBlocks, s, first, first, last, g, headDim, width);
		cp_async_commit();
		for (int j0 = first; j0 <= last; j0 += KT) {
			cp_async_wait<1>();  // this tile's K (its V may still be in flight)
			__syncthreads();
			// S = Q·Kᵀ for the warp's 16 rows and the tile's KT keys.
			float sc[KT / 8][4];
			for (int n = 0; n < KT / 8; n++)
				for (int i = 0; i < 4; i++) sc[n][i] = 0.0f;
			for (int k0 = 0; k0 < HD; k0 += 16) {
				unsigned a[4];
				frag_a(a, qw, LD, k0);
				for (int n = 0; n < KT / 8; n++) {
					unsigned b[2];
					frag_bt(b, ks, LD, 8 * n, k0);
					mma_bf16(sc[n], a, b);
				}
			}
			__syncthreads();  // every warp is done with ks: the next K may land
			int next = j0 + KT;
			if (next <= last)
				ftc_load_kv<HD>(ks, KT, kCache, table, blockSize, maxBlocks, s, next, first, last, g, headDim, width);
			cp_async_commit();  // possibly empty: the group count stays regular

			// Online softmax of the lane's values of its two rows; the four
			// lanes sharing a row (lane/4 equal) combine maxima by shuffles
			// and keep partial sums of l, combined at the end.
			float mNew[2], corr[2];
			for (int i = 0; i < 2; i++) {
				float tileMax = -INFINITY;
				for (int n = 0; n < KT / 8; n++)
					for (int e = 0; e < 2; e++) {
						int key = j0 + 8 * n + 2 * (lane % 4) + e;
						float x = mine[i] && key <= myPos[i] && key >= myFirst[i] ? sc[n][2 * i + e] * scale : -INFINITY;
						sc[n][2 * i + e] = x;
						tileMax = fmaxf(tileMax, x);
					}
				tileMax = fmaxf(tileMax, __shfl_xor_sync(GRPO_FULL_MASK, tileMax, 1));
				tileMax = fmaxf(tileMax, __shfl_xor_sync(GRPO_FULL_MASK, tileMax, 2));
				mNew[i] = fmaxf(m[i], tileMax);
				// A row with no visible key in the tile keeps m, l and o.
				corr[i] = mNew[i] == -INFINITY ? 1.0f : expf(m[i] - mNew[i]);
				float sum = 0.0f;
				for (int n = 0; n < KT / 8; n++)
					for (int e = 0; e < 2; e++) {
						float x = sc[n][2 * i + e], p = x == -INFINITY ? 0.0f : expf(x - mNew[i]);
						sc[n][2 * i + e] = p;
						sum += p;
					}
				l[i] = l[i] * corr[i] + sum;
				m[i] = mNew[i];
			}
			for (int n = 0; n < HD / 8; n++) {
				o[n][0] *= corr[0];
				o[n][1] *= corr[0];
				o[n][2] *= corr[1];
				o[n][3] *= corr[1];
			}
			cp_async_wait<1>();  // this tile's V (the next K may still be in flight)
			__syncthreads();
			// O += P·V: P (16 × KT) straight from the score registers.
			for (int k0 = 0; k0 < KT; k0 += 16) {
				unsigned a[4];
				frag_a_from(a, sc[k0 / 8], sc[k0 / 8 + 1]);
				for (int n = 0; n < HD / 8; n++) {
					unsigned b[2];
					frag_b(b, vs, LD, k0, 8 * n);
					mma_bf16(o[n], a, b);
				}
			}
			__syncthreads();  // every warp is done with vs: the next V may land
			if (next <= last)
				ftc_load_kv<HD>(vs, KT, vCache, table, blockSize, maxBlocks, s, next, first, last, g, headDim, width);
			cp_async_commit();
		}
		cp_async_wait<0>();  // nothing is in flight when the next sequence's tiles are issued
		__syncthreads();     // every thread has read its rows' meta
		for (int r = tid; r < FTC_ROWS; r += blockDim.x)
			if (rowSeq[r] == s) rowDone[r] = 1;
	}

	FTC_UNROLL
	for (int i = 0; i < 2; i++) {
		l[i] += __shfl_xor_sync(GRPO_FULL_MASK, l[i], 1);
		l[i] += __shfl_xor_sync(GRPO_FULL_MASK, l[i], 2);
		int R = r0 + myRow[i];
		if (R >= nRows) continue;
		float c = 1.0f;
		if (sinks) {
			// The sink joins the denominator: rescale to max(m, sink).
			float sk = sinks[g * group + R % group], mNew = fmaxf(m[i], sk);
			c = expf(m[i] - mNew);
			l[i] = l[i] * c + expf(sk - mNew);
			m[i] = mNew;
		}
		long long orow = ftc_row_offset(R, group, g, nHead, headDim);
		for (int n = 0; n < HD / 8; n++) {
			int d = 8 * n + 2 * (lane % 4);
			if (d < headDim) {
				st_as(out, outBF16, orow + d, o[n][2 * i] * c / l[i]);
				st_as(out, outBF16, orow + d + 1, o[n][2 * i + 1] * c / l[i]);
			}
		}
		if (lse && lane % 4 == 0) lse[ftc_lse_index(R, group, g, nHead)] = m[i] + logf(l[i]);
	}
}

#define ATTENTION_FLASH_TC(HD)                                                                                    \
	GRPO_KERNEL void __launch_bounds__(FTC_THREADS)                                                          \
	    attention_flash_tc_hd##HD(void* out, float* lse, const __nv_bfloat16* q, const __nv_bfloat16* kCache,   \
				      const __nv_bfloat16* vCache, const int* seq, const int* pos, const int* table,  \
				      int blockSize, int maxBlocks, int nTok, int nHead, int nKV, int headDim,       \
				      float scale, int window, const float* sinks, int outBF16) {                     \
		attention_flash_tc<HD>(out, lse, q, kCache, vCache, seq, pos, table, blockSize, maxBlocks, nTok, nHead, \
				       nKV, headDim, scale, window, sinks, outBF16);                                 \
	}
ATTENTION_FLASH_TC(64)
ATTENTION_FLASH_TC(128)
ATTENTION_FLASH_TC(256)
