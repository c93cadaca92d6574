// attention_flash_tc_backward.cu: AttentionBackward over bf16 q, K and V
// caches on tensor cores (mma.sync m16n8k16, bf16 operands, f32
// accumulation; flash_tc.cuh) in FlashAttention-2's shape, with no atomics
// (each element of dq, dk and dv has one writer, so two runs give the same
// bits). Probabilities are recomputed from q, k and the forward's lse:
//
//	P = exp(scale·Q·Kᵀ − lse),  D = rowsum(dO ∘ O),  dP = dO·Vᵀ
//	dS = P ∘ (dP − D),  dV = Pᵀ·dO,  dK = scale·dSᵀ·Q,  dQ = scale·dS·K
//
// dO, P and dS are rounded to bf16 as the tensor cores take them; D, the
// softmax and every sum stay f32. Two passes, as attention_flash_backward.cu
// (whose f32 kernels keep f32 operands), in the other order:
//
// attention_flash_tc_dq_hd<HD>: grid (⌈nTok·group / FTC_ROWS⌉, nKV), the
// forward's tiling. A block owns FTC_ROWS rows: it computes their D from
// dout and out (f32 or bf16), writes D and dO rounded to bf16 to the
// scratch dD and dob (each row by its one block), loops over their
// sequences' key tiles, and writes dQ (overwritten; f32 or bf16) once.
//
// attention_flash_tc_dkdv_hd<HD>_<mode>: grid (numBlocks · ⌈blockSize /
// FTC_ROWS⌉, nKV). A block owns up to FTC_ROWS rows of one cache block
// and KV head, 16 keys a warp, finds the table entries that map its cache
// block (in table order: a prompt block shared by several sequences gets
// their gradients summed in that fixed order) and for each loops over the
// query tiles of ftc_qrows(HD) rows with a row that sees one of its keys,
// reading q and the dQ pass's bf16 dO (dob) and D by cp.async; dK and dV
// stay in registers and are added into dk, dv once at the end. mode dkdv
// does both; at head dim 256 both would not fit in registers, so the host
// launches mode dv, then mode dk, each recomputing the probabilities.
//
// Windows: a row sees keys attn_first(pos)..pos; sinks need nothing
// here (the forward's lse holds them, and they are frozen).
// nvcc -ptx -arch=compute_80 attention_flash_tc_backward.cu
#include "flash_tc.cuh"

#define FTC_DV 1
#define FTC_DK 2

// The dQ pass's bf16 flags (kernels/cuda's bf16Mask over dq, dout, out):
// each of them f32 or bf16, read widened, dq rounded once at its store.
#define FTC_BF16_DQ 1
#define FTC_BF16_DOUT 2
#define FTC_BF16_OUT 4

// dS = P·(dP − D): D is the softmax's own term of the Jacobian.
#ifdef GRPO_PLANT_NO_DELTA
#define FTC_DS(p, dp, D) ((p) * (dp) + 0.0f * (D))  // test-only bug: drops D (kernels/emu planted_test.go)
#else
#define FTC_DS(p, dp, D) ((p) * ((dp) - (D)))
#endif

// Shared regions of the dQ pass, in bytes: q and dO rows, a K and a V
// tile, per-row meta (int seq, pos, first, done; f32 lse, D) and 3 ctl.
template <int HD>
struct FtcDqSmem {
	static const int kt = ftc_keys(HD);
	static const int q = 0;
	static const int dO = q + FTC_ROWS * FTC_LD(HD) * 2;
	static const int k = dO + FTC_ROWS * FTC_LD(HD) * 2;
	static const int v = k + kt * FTC_LD(HD) * 2;
	static const int meta = v + kt * FTC_LD(HD) * 2;
	static const int bytes = GRPO_SMEM_END(meta + (6 * FTC_ROWS + 3) * 4);
};

// Shared regions of the dK/dV pass: the block's K and V rows, a tile of q
// and dO rows, their meta (int seq, pos, first; f32 lse, D), 32 floats of
// reduction scratch and 1 ctl.
template <int HD>
struct FtcDkdvSmem {
	static const int qr = ftc_qrows(HD);
	static const int k = 0;
	static const int v = k + FTC_ROWS * FTC_LD(HD) * 2;
	static const int q = v + FTC_ROWS * FTC_LD(HD) * 2;
	static const int dO = q + qr * FTC_LD(HD) * 2;
	static const int meta = dO + qr * FTC_LD(HD) * 2;
	static const int bytes = GRPO_SMEM_END(meta + (5 * qr + 32 + 1) * 4);
};

template <int HD>
__device__ __forceinline__ void attention_flash_tc_dq(void* dq, __nv_bfloat16* dob, float* dD, const void* dout,
						      const void* out, const float* lse, const __nv_bfloat16* q,
						      const __nv_bfloat16* kCache, const __nv_bfloat16* vCache,
						      const int* seq, const int* pos, const int* table, int blockSize,
						      int maxBlocks, int nTok, int nHead, int nKV, int headDim, float scale,
						      int window, int bf16) {
	typedef FtcDqSmem<HD> L;
	const int KT = L::kt, LD = FTC_LD(HD);
	GRPO_DYNAMIC_SHARED(unsigned char, smem);
	__nv_bfloat16* qs = (__nv_bfloat16*)(smem + L::q);
	__nv_bfloat16* dos = (__nv_bfloat16*)(smem + L::dO);
	__nv_bfloat16* ks = (__nv_bfloat16*)(smem + L::k);
	__nv_bfloat16* vs = (__nv_bfloat16*)(smem + L::v);
	int* rowSeq = (int*)(smem + L::meta);
	int* rowPos = rowSeq + FTC_ROWS;
	int* rowFirst = rowPos + FTC_ROWS;
	int* rowDone = rowFirst + FTC_ROWS;
	float* rowLse = (float*)(rowDone + FTC_ROWS);
	float* rowD = rowLse + FTC_ROWS;
	int* ctl = (int*)(rowD + FTC_ROWS);

	int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
	int g = blockIdx.y, group = nHead / nKV, nRows = nTok * group, r0 = blockIdx.x * FTC_ROWS;
	int width = nKV * headDim;
	ftc_load_rows<HD>(qs, FTC_ROWS, q, r0, nRows, group, g, nHead, headDim);
	cp_async_commit();
	// dO rounded to bf16, into the tile and dob; D = Σ_d dout·out in f32,
	// two threads a row.
	for (int i = tid; i < FTC_ROWS * HD; i += blockDim.x) {
		int r = i / HD, d = i % HD, R = r0 + r;
		float v = 0.0f;
		if (R < nRows && d < headDim) {
			long long at = ftc_row_offset(R, group, g, nHead, headDim) + d;
			v = ld_as(dout, bf16 & FTC_BF16_DOUT, at);
			dob[at] = __float2bfloat16_rn(v);
		}
		dos[r * LD + d] = __float2bfloat16_rn(v);
	}
	static_assert(2 * FTC_ROWS == FTC_THREADS, "two threads per row");
	{
		int r = tid / 2, R = r0 + r;
		float part = 0.0f;
		if (R < nRows) {
			long long at = ftc_row_offset(R, group, g, nHead, headDim);
			for (int d = tid % 2; d < headDim; d += 2)
				part += ld_as(dout, bf16 & FTC_BF16_DOUT, at + d) * ld_as(out, bf16 & FTC_BF16_OUT, at + d);
		}
		part += __shfl_xor_sync(GRPO_FULL_MASK, part, 1);
		if (tid % 2 == 0) {
			bool valid = R < nRows;
			rowSeq[r] = valid ? seq[R / group] : -1;
			rowPos[r] = valid ? pos[R / group] : -1;
			rowFirst[r] = valid ? attn_first(rowPos[r], window) : 0;
			rowDone[r] = !valid;
			rowLse[r] = valid ? lse[ftc_lse_index(R, group, g, nHead)] : 0.0f;
			rowD[r] = part;
			if (valid) dD[ftc_lse_index(R, group, g, nHead)] = part;
		}
	}
	cp_async_wait<0>();

	const __nv_bfloat16* qw = qs + 16 * warp * LD;
	const __nv_bfloat16* dow = dos + 16 * warp * LD;
	int myRow[2] = {16 * warp + lane / 4, 16 * warp + lane / 4 + 8};
	float acc[HD / 8][4];
	for (int n = 0; n < HD / 8; n++)
		for (int i = 0; i < 4; i++) acc[n][i] = 0.0f;

	for (;;) {
		__syncthreads();
		if (tid == 0) {
			int s = -1, last = -1, first = 0x7fffffff;
			for (int r = 0; r < FTC_ROWS; r++)
				if (!rowDone[r]) {
					if (s < 0) s = rowSeq[r];
					if (rowSeq[r] == s) {
						last = max(last, rowPos[r]);
						first = min(first, rowFirst[r]);
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
		float myLse[2], myD[2];
		for (int i = 0; i < 2; i++) {
			int r = myRow[i];
			mine[i] = rowSeq[r] == s && !rowDone[r];
			myPos[i] = rowPos[r];
			myFirst[i] = rowFirst[r];
			myLse[i] = rowLse[r];
			myD[i] = rowD[r];
		}
		for (int j0 = first; j0 <= last; j0 += KT) {
			ftc_load_kv<HD>(ks, KT, kCache, table, blockSize, maxBlocks, s, j0, first, last, g, headDim, width);
			ftc_load_kv<HD>(vs, KT, vCache, table, blockSize, maxBlocks, s, j0, first, last, g, headDim, width);
			cp_async_commit();
			cp_async_wait<0>();
			__syncthreads();
			// S = Q·Kᵀ and dP = dO·Vᵀ for the warp's 16 rows.
			float sc[KT / 8][4], dp[KT / 8][4];
			for (int n = 0; n < KT / 8; n++)
				for (int i = 0; i < 4; i++) sc[n][i] = dp[n][i] = 0.0f;
			for (int k0 = 0; k0 < HD; k0 += 16) {
				unsigned a[4], b[2];
				frag_a(a, qw, LD, k0);
				for (int n = 0; n < KT / 8; n++) {
					frag_bt(b, ks, LD, 8 * n, k0);
					mma_bf16(sc[n], a, b);
				}
				frag_a(a, dow, LD, k0);
				for (int n = 0; n < KT / 8; n++) {
					frag_bt(b, vs, LD, 8 * n, k0);
					mma_bf16(dp[n], a, b);
				}
			}
			// dS = P·(dP − D), into sc.
			for (int n = 0; n < KT / 8; n++)
				for (int e = 0; e < 4; e++) {
					int i = e / 2, key = j0 + 8 * n + 2 * (lane % 4) + e % 2;
					bool vis = mine[i] && key <= myPos[i] && key >= myFirst[i];
					float p = vis ? expf(sc[n][e] * scale - myLse[i]) : 0.0f;
					sc[n][e] = vis ? FTC_DS(p, dp[n][e], myD[i]) : 0.0f;
				}
			// dQ += dS·K.
			for (int k0 = 0; k0 < KT; k0 += 16) {
				unsigned a[4];
				frag_a_from(a, sc[k0 / 8], sc[k0 / 8 + 1]);
				for (int n = 0; n < HD / 8; n++) {
					unsigned b[2];
					frag_b(b, ks, LD, k0, 8 * n);
					mma_bf16(acc[n], a, b);
				}
			}
			__syncthreads();  // ks, vs are refilled by the next tile
		}
		for (int r = tid; r < FTC_ROWS; r += blockDim.x)
			if (rowSeq[r] == s) rowDone[r] = 1;
	}

	FTC_UNROLL
	for (int i = 0; i < 2; i++) {
		int R = r0 + myRow[i];
		if (R >= nRows) continue;
		long long row = ftc_row_offset(R, group, g, nHead, headDim);
		for (int n = 0; n < HD / 8; n++) {
			int d = 8 * n + 2 * (lane % 4);
			if (d < headDim) {
				st_as(dq, bf16 & FTC_BF16_DQ, row + d, scale * acc[n][2 * i]);
				st_as(dq, bf16 & FTC_BF16_DQ, row + d + 1, scale * acc[n][2 * i + 1]);
			}
		}
	}
}

template <int HD, int MODE>
__device__ __forceinline__ void attention_flash_tc_dkdv(float* dk, float* dv, const __nv_bfloat16* dob, const float* dD,
							const float* lse, const __nv_bfloat16* q,
							const __nv_bfloat16* kCache, const __nv_bfloat16* vCache,
							const int* seq, const int* pos, const int* table, int blockSize,
							int maxBlocks, int seqs, int nTok, int nHead, int nKV, int headDim,
							float scale, int window) {
	typedef FtcDkdvSmem<HD> L;
	const int QR = L::qr, LD = FTC_LD(HD);
	GRPO_DYNAMIC_SHARED(unsigned char, smem);
	__nv_bfloat16* ks = (__nv_bfloat16*)(smem + L::k);
	__nv_bfloat16* vs = (__nv_bfloat16*)(smem + L::v);
	__nv_bfloat16* qs = (__nv_bfloat16*)(smem + L::q);
	__nv_bfloat16* dos = (__nv_bfloat16*)(smem + L::dO);
	int* rowSeq = (int*)(smem + L::meta);
	int* rowPos = rowSeq + QR;
	int* rowFirst = rowPos + QR;
	float* rowLse = (float*)(rowFirst + QR);
	float* rowD = rowLse + QR;
	float* red = rowD + QR;
	int* ctl = (int*)(red + 32);

	int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
	int tilesPerBlock = (blockSize + FTC_ROWS - 1) / FTC_ROWS;
	int blk = blockIdx.x / tilesPerBlock, row0 = blockIdx.x % tilesPerBlock * FTC_ROWS, g = blockIdx.y;
	int nk = min(FTC_ROWS, blockSize - row0);  // cache rows of this tile
	int group = nHead / nKV, nRows = nTok * group, width = nKV * headDim;
	const __nv_bfloat16* kw = ks + 16 * warp * LD;
	const __nv_bfloat16* vw = vs + 16 * warp * LD;
	int myKey[2] = {16 * warp + lane / 4, 16 * warp + lane / 4 + 8};

	float accK[MODE & FTC_DK ? HD / 8 : 1][4], accV[MODE & FTC_DV ? HD / 8 : 1][4];
	for (int n = 0; n < (MODE & FTC_DK ? HD / 8 : 1); n++)
		for (int i = 0; i < 4; i++) accK[n][i] = 0.0f;
	for (int n = 0; n < (MODE & FTC_DV ? HD / 8 : 1); n++)
		for (int i = 0; i < 4; i++) accV[n][i] = 0.0f;
	int written = 0;  // rows 0..written-1 of the tile are seen by some query
	for (int entry = 0;; entry++) {
		entry = paged_next_entry(table, entry, seqs * maxBlocks, blk, ctl);
		if (entry >= seqs * maxBlocks) break;
		int s, j0, first, last;
		if (!paged_entry_reach(entry, seq, pos, maxBlocks, blockSize, nTok, row0, nk, window, red, s, j0, first, last))
			continue;  // uniform
		written = max(written, last - j0 + 1);
		ftc_load_kv<HD>(ks, FTC_ROWS, kCache, table, blockSize, maxBlocks, s, j0, first, last, g, headDim, width);
		ftc_load_kv<HD>(vs, FTC_ROWS, vCache, table, blockSize, maxBlocks, s, j0, first, last, g, headDim, width);
		cp_async_commit();
		for (int r0 = 0; r0 < nRows; r0 += QR) {
			__syncthreads();  // the previous tile's q, dO and meta are no longer read
			for (int r = tid; r < QR; r += blockDim.x) {
				int R = r0 + r;
				bool valid = R < nRows;
				rowSeq[r] = valid ? seq[R / group] : -1;
				rowPos[r] = valid ? pos[R / group] : -1;
				rowFirst[r] = valid ? attn_first(rowPos[r], window) : 0;
				rowLse[r] = valid ? lse[ftc_lse_index(R, group, g, nHead)] : 0.0f;
				rowD[r] = valid ? dD[ftc_lse_index(R, group, g, nHead)] : 0.0f;
			}
			__syncthreads();
			// Does any row of the tile see a key of this block?
			bool any = false;
			for (int r = 0; r < QR; r++) any = any || (rowSeq[r] == s && rowPos[r] >= j0 && rowFirst[r] <= last);
			if (!any) continue;  // uniform
			ftc_load_rows<HD>(qs, QR, q, r0, nRows, group, g, nHead, headDim);
			ftc_load_rows<HD>(dos, QR, dob, r0, nRows, group, g, nHead, headDim);
			cp_async_commit();
			cp_async_wait<0>();  // and the block's K and V, the first time
			__syncthreads();
			// Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ for the warp's 16 keys.
			float st[QR / 8][4], dpt[MODE & FTC_DK ? QR / 8 : 1][4];
			for (int n = 0; n < QR / 8; n++)
				for (int i = 0; i < 4; i++) st[n][i] = 0.0f;
			for (int n = 0; n < (MODE & FTC_DK ? QR / 8 : 1); n++)
				for (int i = 0; i < 4; i++) dpt[n][i] = 0.0f;
			for (int k0 = 0; k0 < HD; k0 += 16) {
				unsigned a[4], b[2];
				frag_a(a, kw, LD, k0);
				for (int n = 0; n < QR / 8; n++) {
					frag_bt(b, qs, LD, 8 * n, k0);
					mma_bf16(st[n], a, b);
				}
				if (MODE & FTC_DK) {
					frag_a(a, vw, LD, k0);
					for (int n = 0; n < QR / 8; n++) {
						frag_bt(b, dos, LD, 8 * n, k0);
						mma_bf16(dpt[n], a, b);
					}
				}
			}
			// Pᵀ into st, dSᵀ into dpt.
			for (int n = 0; n < QR / 8; n++)
				for (int e = 0; e < 4; e++) {
					int c = 8 * n + 2 * (lane % 4) + e % 2, key = j0 + myKey[e / 2];
					bool vis = rowSeq[c] == s && key <= rowPos[c] && key <= last && key >= rowFirst[c];
					float p = vis ? expf(st[n][e] * scale - rowLse[c]) : 0.0f;
					st[n][e] = p;
					if (MODE & FTC_DK) {
						dpt[n][e] = vis ? FTC_DS(p, dpt[n][e], rowD[c]) : 0.0f;
					}
				}
			// dV += Pᵀ·dO, dK += dSᵀ·Q.
			for (int k0 = 0; k0 < QR; k0 += 16) {
				unsigned a[4], b[2];
				if (MODE & FTC_DV) {
					frag_a_from(a, st[k0 / 8], st[k0 / 8 + 1]);
					for (int n = 0; n < HD / 8; n++) {
						frag_b(b, dos, LD, k0, 8 * n);
						mma_bf16(accV[n], a, b);
					}
				}
				if (MODE & FTC_DK) {
					frag_a_from(a, dpt[k0 / 8], dpt[k0 / 8 + 1]);
					for (int n = 0; n < HD / 8; n++) {
						frag_b(b, qs, LD, k0, 8 * n);
						mma_bf16(accK[n], a, b);
					}
				}
			}
		}
		cp_async_wait<0>();  // a mapping whose query tiles were all skipped leaves its K, V in flight
	}
	if (written == 0) return;  // uniform

	// Each lane adds its own elements into the cache-shaped gradients.
	long long base = ((long long)blk * blockSize + row0) * width + (long long)g * headDim;
	FTC_UNROLL
	for (int i = 0; i < 2; i++) {
		if (myKey[i] >= written) continue;
		long long at = base + (long long)myKey[i] * width;
		for (int n = 0; n < HD / 8; n++) {
			int d = 8 * n + 2 * (lane % 4);
			if (d >= headDim) continue;
			if (MODE & FTC_DK) {
				dk[at + d] += scale * accK[n][2 * i];
				dk[at + d + 1] += scale * accK[n][2 * i + 1];
			}
			if (MODE & FTC_DV) {
				dv[at + d] += accV[n][2 * i];
				dv[at + d + 1] += accV[n][2 * i + 1];
			}
		}
	}
}

#define ATTENTION_FLASH_TC_DQ(HD)                                                                                  \
	GRPO_KERNEL void __launch_bounds__(FTC_THREADS) attention_flash_tc_dq_hd##HD(                               \
	    void* dq, __nv_bfloat16* dob, float* dD, const void* dout, const void* out, const float* lse,            \
	    const __nv_bfloat16* q, const __nv_bfloat16* kCache, const __nv_bfloat16* vCache, const int* seq,        \
	    const int* pos, const int* table, int blockSize, int maxBlocks, int nTok, int nHead, int nKV, int headDim, \
	    float scale, int window, int bf16) {                                                                      \
		attention_flash_tc_dq<HD>(dq, dob, dD, dout, out, lse, q, kCache, vCache, seq, pos, table, blockSize, \
					  maxBlocks, nTok, nHead, nKV, headDim, scale, window, bf16);                  \
	}
#define ATTENTION_FLASH_TC_DKDV(HD, MODE, suffix)                                                                  \
	GRPO_KERNEL void __launch_bounds__(FTC_THREADS) attention_flash_tc_dkdv_hd##HD##_##suffix(                   \
	    float* dk, float* dv, const __nv_bfloat16* dob, const float* dD, const float* lse, const __nv_bfloat16* q, \
	    const __nv_bfloat16* kCache, const __nv_bfloat16* vCache, const int* seq, const int* pos, const int* table, \
	    int blockSize, int maxBlocks, int seqs, int nTok, int nHead, int nKV, int headDim, float scale,           \
	    int window) {                                                                                             \
		attention_flash_tc_dkdv<HD, MODE>(dk, dv, dob, dD, lse, q, kCache, vCache, seq, pos, table, blockSize, \
						  maxBlocks, seqs, nTok, nHead, nKV, headDim, scale, window);         \
	}
ATTENTION_FLASH_TC_DQ(64)
ATTENTION_FLASH_TC_DQ(128)
ATTENTION_FLASH_TC_DQ(256)
ATTENTION_FLASH_TC_DKDV(64, FTC_DK | FTC_DV, dkdv)
ATTENTION_FLASH_TC_DKDV(128, FTC_DK | FTC_DV, dkdv)
ATTENTION_FLASH_TC_DKDV(256, FTC_DV, dv)
ATTENTION_FLASH_TC_DKDV(256, FTC_DK, dk)
