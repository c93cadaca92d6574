// attention_backward.cu: AttentionBackward, the backward of attention.cu's
// causal grouped-query attention over the paged KV cache (kernels.KVPages),
// flash-style: the probabilities are recomputed from q, k and the
// forward's lse, never stored. For a query row (token t, head h) with
// visible keys j ≤ pos[t]:
//
//	p_j  = exp(scale·q·k_j − lse),   D = Σ_d dout[d]·out[d]
//	ds_j = p_j·(dout·v_j − D)
//	dq  = scale·Σ_j ds_j·k_j          (written)
//	dk_j += scale·ds_j·q,  dv_j += p_j·dout   (added into the cache layout)
//
// With a sliding window (window > 0) the visible keys are pos − window +
// 1..pos and no key before is read. Sinks need nothing here: the
// forward's lse holds them, so p_j is the forward's, and the sink has no
// value (its column of dP is 0); the sinks are frozen, no gradient.
//
// Launch: grid (nTok, nKV), block (128), dynamic shared memory
// (3·group·headDim + group + 2·group·blockDim + blockDim) floats, group =
// nHead/nKV.
// One block per (token, KV head) handles the group's query heads together,
// so the K/V rows of a tile are read once for all of them and the group's
// dk/dv contributions are summed in registers before they reach memory.
// The block walks the visible keys in tiles of blockDim: thread j finds
// the cache row of key j of the tile through the block table, scores it
// for every head (serial dot products against q and dout in shared
// memory) and stores the row, p and ds; then each thread, for the
// dims d ≡ threadIdx.x (mod blockDim) it owns, accumulates dq in shared
// memory and adds dk, dv for every key of the tile.
//
// Races: every token of a sequence reads, and so adds into, the dk/dv rows
// of the positions it sees (and sequences sharing prompt blocks add into
// the same rows), and those tokens run in different blocks. The
// adds are float32 atomicAdd, so the sum is correct but its order — and
// hence the last bits of dk and dv — varies from run to run
// (nondeterministic, see CUDA.md). dq is owned by one block, and within
// it each element by one thread: deterministic.
// nvcc -ptx -arch=compute_90 attention_backward.cu
#include "common.cuh"

// ds_j = p_j·(dp_j − D): D is the softmax's own term of the Jacobian.
#ifdef GRPO_PLANT_NO_DELTA
#define ATTN_DS(p, dp, D) ((p) * (dp))  // test-only bug: drops D (kernels/emu planted_test.go)
#else
#define ATTN_DS(p, dp, D) ((p) * ((dp) - (D)))
#endif

// T is the cache's element type: f32, the training cache's. (A bf16
// instantiation compiles, but spills under ptxas at 128 threads, and no
// caller trains on a bf16 cache.)
template <class T>
__device__ __forceinline__ void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* out,
						   const float* lse, const float* q, const T* kCache, const T* vCache,
						   const int* seq, const int* pos, const int* table, int nHead, int nKV,
						   int headDim, int blockSize, int maxBlocks, float scale, int window) {
	GRPO_DYNAMIC_SHARED(float, smem);
	GRPO_SHARED(float, scratch, [32]);
	int t = blockIdx.x, g = blockIdx.y, tid = threadIdx.x, bd = blockDim.x;
	int group = nHead / nKV, span = group * headDim;
	float* qs = smem;             // span: q of the group's heads
	float* dos = qs + span;       // span: dout
	float* dqs = dos + span;      // span: dq accumulator
	float* Ds = dqs + span;       // group: D per head
	float* ps = Ds + group;       // group × bd: p of the tile
	float* dss = ps + group * bd; // group × bd: ds of the tile
	int* rows = (int*)(dss + group * bd);  // bd: the cache row of each key of the tile

	long long head0 = (long long)t * nHead + (long long)g * group;  // first query row of the group
	const float* qRow = q + head0 * headDim;
	const float* doRow = dout + head0 * headDim;
	const float* oRow = out + head0 * headDim;
	for (int i = tid; i < span; i += bd) {
		qs[i] = qRow[i];
		dos[i] = doRow[i];
		dqs[i] = 0.0f;
	}
	for (int h = 0; h < group; h++) {
		float part = 0.0f;
		for (int d = tid; d < headDim; d += bd) part += doRow[h * headDim + d] * oRow[h * headDim + d];
		part = block_sum(part, scratch);  // its barriers also publish qs, dos, dqs
		if (tid == 0) Ds[h] = part;
	}
	__syncthreads();

	int n = pos[t] + 1, sq = seq[t], lo = window > 0 ? max(0, pos[t] - window + 1) : 0;
	long long rowStride = (long long)nKV * headDim;
	long long base = (long long)g * headDim;
	const T* kBase = kCache + base;
	const T* vBase = vCache + base;
	for (int j0 = lo; j0 < n; j0 += bd) {
		int j = j0 + tid;
		if (j < n) {
			long long r = kv_row(table, sq, j, blockSize, maxBlocks);
			rows[tid] = (int)r;
			const T* kRow = kBase + r * rowStride;
			const T* vRow = vBase + r * rowStride;
			for (int h = 0; h < group; h++) {
				const float* qh = qs + h * headDim;
				const float* doh = dos + h * headDim;
				float s = 0.0f, dp = 0.0f;
				for (int d = 0; d < headDim; d++) {
					s += qh[d] * ld(kRow, d);
					dp += doh[d] * ld(vRow, d);
				}
				float p = expf(s * scale - lse[head0 + h]);
				ps[h * bd + tid] = p;
				dss[h * bd + tid] = ATTN_DS(p, dp, Ds[h]);
			}
		}
		__syncthreads();  // rows, ps, dss of the tile are complete
		int tile = min(bd, n - j0);
		for (int d = tid; d < headDim; d += bd) {
			for (int h = 0; h < group; h++) {
				float a = 0.0f;
				for (int jj = 0; jj < tile; jj++) a += dss[h * bd + jj] * ld(kBase, rows[jj] * rowStride + d);
				dqs[h * headDim + d] += scale * a;
			}
			for (int jj = 0; jj < tile; jj++) {
				float gk = 0.0f, gv = 0.0f;
				for (int h = 0; h < group; h++) {
					gk += dss[h * bd + jj] * qs[h * headDim + d];
					gv += ps[h * bd + jj] * dos[h * headDim + d];
				}
				long long at = rows[jj] * rowStride + d;
				atomicAdd(dk + base + at, scale * gk);
				atomicAdd(dv + base + at, gv);
			}
		}
		__syncthreads();  // rows, ps, dss are rewritten by the next tile
	}
	float* dqRow = dq + head0 * headDim;
	for (int h = 0; h < group; h++)
		for (int d = tid; d < headDim; d += bd) dqRow[h * headDim + d] = dqs[h * headDim + d];
}
GRPO_KERNEL void __launch_bounds__(128) attention_backward_f32(float* dq, float* dk, float* dv, const float* dout, const float* out,
							       const float* lse, const float* q, const float* kCache,
							       const float* vCache, const int* seq, const int* pos, const int* table,
							       int nTok, int nHead, int nKV, int headDim, int blockSize, int maxBlocks,
							       float scale, int window) {
	attention_backward(dq, dk, dv, dout, out, lse, q, kCache, vCache, seq, pos, table, nHead, nKV, headDim, blockSize, maxBlocks, scale, window);
}
