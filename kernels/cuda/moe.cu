// moe.cu: the mixture-of-experts ops (kernels.MoEOps). Routing runs one
// thread per token (a token's softmax over ≤ a few hundred experts and its
// top-k are sequential work, in the CPU backend's order, so both pick the
// same experts); grouping is a count per expert and a stable placement by
// block-wide scans, both on the device; the grouped GEMM is one tiled
// kernel over every expert's rows, each block finding its expert from the
// offsets; combining is one block per token or assignment.
// nvcc -ptx -arch=compute_90 moe.cu
#include "common.cuh"

// MOE_MAX_TOPK bounds topK (Go checks it): a token's chosen experts live in
// registers.
#define MOE_MAX_TOPK 32

// route_probs writes nothing; it returns the max and the sum of
// expf(v − max) of a token's logits, so p_i = expf(v_i − max) / sum.
__device__ __forceinline__ void route_stats(const float* l, int nExperts, float* mx, float* sum) {
	float m = -INFINITY;
	for (int i = 0; i < nExperts; i++) m = fmaxf(m, l[i]);
	float s = 0.0f;
	for (int i = 0; i < nExperts; i++) s += expf(l[i] - m);
	*mx = m;
	*sum = s;
}

// grid-stride over tokens, block (256).
GRPO_KERNEL void __launch_bounds__(256) moe_route_f32(float* weights, int* experts, const float* logits, int n, int nExperts, int topK,
						      int normTopK, int replay) {
	for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < n; t += (long long)gridDim.x * blockDim.x) {
		const float* l = logits + t * nExperts;
		float m, s;
		route_stats(l, nExperts, &m, &s);
		int* e = experts + t * topK;
		float* w = weights + t * topK;
		int chosen[MOE_MAX_TOPK];
		for (int j = 0; j < topK; j++) {
			if (replay) {
				chosen[j] = e[j];
				continue;
			}
			int best = -1;
			float bp = 0.0f;
			for (int i = 0; i < nExperts; i++) {
				bool used = false;
				for (int q = 0; q < j; q++) used |= chosen[q] == i;
				if (used) continue;
				float p = expf(l[i] - m) / s;
				if (best < 0 || p > bp) {
					best = i;
					bp = p;
				}
			}
			chosen[j] = best;
			e[j] = best;
		}
		float sum = 0.0f;
		for (int j = 0; j < topK; j++) {
			w[j] = expf(l[chosen[j]] - m) / s;
			sum += w[j];
		}
		if (normTopK)
			for (int j = 0; j < topK; j++) w[j] /= sum;
	}
}

// grid-stride over tokens, block (256): dlogits = softmax backward of
// dp: the routing weights' gradient at the token's (distinct) experts,
// plus dprobs (every expert, the same for every token) when not null.
GRPO_KERNEL void __launch_bounds__(256) moe_route_backward_f32(float* dlogits, const float* dweights, const float* dprobs, const float* logits,
							       const int* experts, int n, int nExperts, int topK, int normTopK) {
	for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < n; t += (long long)gridDim.x * blockDim.x) {
		const float* l = logits + t * nExperts;
		float m, s;
		route_stats(l, nExperts, &m, &s);
		const int* e = experts + t * topK;
		const float* dw = dweights + t * topK;
		double p[MOE_MAX_TOPK], dp[MOE_MAX_TOPK];
		double ps = 0.0, dws = 0.0;
		for (int j = 0; j < topK; j++) {
			p[j] = (double)(expf(l[e[j]] - m) / s);
			ps += p[j];
			dws += (double)dw[j] * p[j];
		}
		double dot = 0.0;
		for (int j = 0; j < topK; j++) {
			dp[j] = normTopK ? (double)dw[j] / ps - dws / (ps * ps) : (double)dw[j];
			dot += p[j] * dp[j];
		}
		if (dprobs)
			for (int i = 0; i < nExperts; i++) dot += (double)(expf(l[i] - m) / s) * (double)dprobs[i];
		float* dl = dlogits + t * nExperts;
		for (int i = 0; i < nExperts; i++) {
			double pi = (double)(expf(l[i] - m) / s), dpi = dprobs ? (double)dprobs[i] : 0.0;
			for (int j = 0; j < topK; j++)
				if (e[j] == i) dpi += dp[j];
			dl[i] = (float)(pi * (dpi - dot));
		}
	}
}

// moe_sigmoid: a token's sigmoid score s_i in f32, as the CPU backend
// computes it.
__device__ __forceinline__ float moe_sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }

// moe_choice is expert i's choice score: s_i plus the correction bias.
__device__ __forceinline__ float moe_choice(const float* l, const float* bias, int i) {
	float c = moe_sigmoid(l[i]);
	return bias ? c + bias[i] : c;
}

// moe_top_groups returns the mask of the topKGroups groups (of per
// consecutive experts) whose two largest choice scores sum highest, ties
// to the lower group; all groups when topKGroups ≥ groups.
__device__ unsigned long long moe_top_groups(const float* l, const float* bias, int groups, int per, int topKGroups) {
	if (topKGroups >= groups) return ~0ULL;
	unsigned long long chosen = 0;
	for (int q = 0; q < topKGroups; q++) {
		int best = -1;
		float bs = 0.0f;
		for (int g = 0; g < groups; g++) {
			if (chosen >> g & 1ULL) continue;
			int first = 0, second = -1;
			for (int i = 1; i < per; i++)
				if (moe_choice(l, bias, g * per + i) > moe_choice(l, bias, g * per + first)) first = i;
			for (int i = 0; i < per; i++)
				if (i != first && (second < 0 || moe_choice(l, bias, g * per + i) > moe_choice(l, bias, g * per + second))) second = i;
			float v = moe_choice(l, bias, g * per + first) + moe_choice(l, bias, g * per + second);
			if (best < 0 || v > bs) {
				best = g;
				bs = v;
			}
		}
		chosen |= 1ULL << best;
	}
	return chosen;
}

// grid-stride over tokens, block (256): kernels.MoEOps.MoERouteSigmoid,
// one thread per token in the CPU backend's order (the group scores, then
// top-k of the masked choice scores, then the weights).
GRPO_KERNEL void __launch_bounds__(256) moe_route_sigmoid_f32(float* weights, int* experts, const float* logits, const float* bias, int n,
							      int nExperts, int topK, int groups, int topKGroups, int normTopK, float scale,
							      int replay) {
	int per = nExperts / groups;
	for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < n; t += (long long)gridDim.x * blockDim.x) {
		const float* l = logits + t * nExperts;
		int* e = experts + t * topK;
		float* w = weights + t * topK;
		int chosen[MOE_MAX_TOPK];
		unsigned long long eligible = replay ? 0ULL : moe_top_groups(l, bias, groups, per, topKGroups);
		for (int j = 0; j < topK; j++) {
			if (replay) {
				chosen[j] = e[j];
				continue;
			}
			int best = -1;
			float bc = 0.0f;
			for (int i = 0; i < nExperts; i++) {
				bool used = false;
				for (int q = 0; q < j; q++) used |= chosen[q] == i;
				if (used) continue;
				float c = (eligible >> (i / per) & 1ULL) ? moe_choice(l, bias, i) : 0.0f;
				if (best < 0 || c > bc) {
					best = i;
					bc = c;
				}
			}
			chosen[j] = best;
			e[j] = best;
		}
		float sum = 0.0f;
		for (int j = 0; j < topK; j++) {
			w[j] = moe_sigmoid(l[chosen[j]]);
			sum += w[j];
		}
		for (int j = 0; j < topK; j++) {
			if (normTopK) w[j] /= sum + 1e-20f;
			w[j] *= scale;
		}
	}
}

// grid-stride over tokens, block (256): MoERouteSigmoid's backward for
// fixed experts, in double as the CPU backend.
GRPO_KERNEL void __launch_bounds__(256) moe_route_sigmoid_backward_f32(float* dlogits, const float* dweights, const float* logits,
								       const int* experts, int n, int nExperts, int topK, int normTopK,
								       float scale) {
	for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < n; t += (long long)gridDim.x * blockDim.x) {
		const float* l = logits + t * nExperts;
		const int* e = experts + t * topK;
		const float* dw = dweights + t * topK;
		float* dl = dlogits + t * nExperts;
		for (int i = 0; i < nExperts; i++) dl[i] = 0.0f;
		double s[MOE_MAX_TOPK];
		double sum = 0.0, dws = 0.0;
		for (int j = 0; j < topK; j++) {
			s[j] = (double)moe_sigmoid(l[e[j]]);
			sum += s[j];
			dws += (double)dw[j] * s[j];
		}
		sum += 1e-20;
		for (int j = 0; j < topK; j++) {
			double ds = normTopK ? (double)dw[j] / sum - dws / (sum * sum) : (double)dw[j];
			dl[e[j]] = (float)((double)scale * ds * s[j] * (1.0 - s[j]));
		}
	}
}

// block_count_i32 sums an int over a 1-D block of 256 threads.
__device__ __forceinline__ int block_count_i32(int v, int* scratch) {
	scratch[threadIdx.x] = v;
	__syncthreads();
	for (int o = blockDim.x / 2; o > 0; o >>= 1) {
		if ((int)threadIdx.x < o) scratch[threadIdx.x] += scratch[threadIdx.x + o];
		__syncthreads();
	}
	int r = scratch[0];
	__syncthreads();
	return r;
}

// grid (nExperts), block (256): counts[e] = assignments routed to e.
GRPO_KERNEL void __launch_bounds__(256) moe_count_i32(int* counts, const int* experts, int total) {
	GRPO_SHARED(int, scratch, [256]);
	int e = blockIdx.x, c = 0;
	for (int a = threadIdx.x; a < total; a += blockDim.x) c += experts[a] == e;
	c = block_count_i32(c, scratch);
	if (threadIdx.x == 0) counts[e] = c;
}

// grid (nExperts), block (256): block e places its assignments, in
// assignment order, from row offsets[e] = Σ counts[< e], by an inclusive
// scan of the match flags over each chunk of 256 assignments.
GRPO_KERNEL void __launch_bounds__(256) moe_place_i32(int* offsets, int* tokens, int* rows, const int* counts, const int* experts, int total,
						      int nExperts, int topK) {
	GRPO_SHARED(int, scan, [256]);
	GRPO_SHARED(int, base, [1]);
	int e = blockIdx.x;
	if (threadIdx.x == 0) {
		int b = 0;
		for (int q = 0; q < e; q++) b += counts[q];
		base[0] = b;
		offsets[e] = b;
		if (e == nExperts - 1) offsets[nExperts] = b + counts[e];
	}
	__syncthreads();
	int run = base[0];
	for (int c0 = 0; c0 < total; c0 += blockDim.x) {
		int a = c0 + threadIdx.x;
		int flag = a < total && experts[a] == e;
		scan[threadIdx.x] = flag;
		__syncthreads();
		for (int o = 1; o < (int)blockDim.x; o <<= 1) {
			int v = (int)threadIdx.x >= o ? scan[threadIdx.x - o] : 0;
			__syncthreads();
			scan[threadIdx.x] += v;
			__syncthreads();
		}
		if (flag) {
			int r = run + scan[threadIdx.x] - 1;
			rows[a] = r;
			tokens[r] = a / topK;
		}
		run += scan[blockDim.x - 1];
		__syncthreads();
	}
}

// The grouped GEMM's tiles: a block computes GMM_TM rows × GMM_TN columns
// of one expert, 256 threads of 4 × 4 outputs each, stepping GMM_TK along
// k through shared memory, summing in k order.
#define GMM_TM 64
#define GMM_TN 64
#define GMM_TK 16

// grid (⌈rows/GMM_TM⌉ + nExperts, ⌈n/GMM_TN⌉), block (256): row tile x of
// the flattened per-expert tile list; blocks past its end return. A and C
// are f32 or bf16 activations (a bf16 one read widened, a bf16 C stored
// rounded to nearest even once, after beta·C is added in f32).
template <class A, class C, class W>
__device__ __forceinline__ void grouped_matmul(C* c, const A* a, const W* b, const int* offsets, int nExperts, int n, int k, int transB,
					       float alpha, float beta) {
	GRPO_SHARED(float, As, [GMM_TK][GMM_TM]);
	GRPO_SHARED(float, Bs, [GMM_TK][GMM_TN]);
	GRPO_SHARED(int, tile, [2]);
	if (threadIdx.x == 0) {
		int t = blockIdx.x, found = -1, r0 = 0;
		for (int e = 0; e < nExperts; e++) {
			int tiles = (offsets[e + 1] - offsets[e] + GMM_TM - 1) / GMM_TM;
			if (t < tiles) {
				found = e;
				r0 = offsets[e] + t * GMM_TM;
				break;
			}
			t -= tiles;
		}
		tile[0] = found;
		tile[1] = r0;
	}
	__syncthreads();
	int e = tile[0];
	if (e < 0) return; // the whole block: e is shared
	int r0 = tile[1], rEnd = offsets[e + 1], c0 = blockIdx.y * GMM_TN;
	const W* be = b + (long long)e * k * n;
	int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
	float acc[4][4];
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;
	for (int k0 = 0; k0 < k; k0 += GMM_TK) {
		for (int i = threadIdx.x; i < GMM_TM * GMM_TK; i += blockDim.x) {
			int rr = i / GMM_TK, kk = i % GMM_TK, r = r0 + rr, kc = k0 + kk;
			As[kk][rr] = r < rEnd && kc < k ? ldc(a, (long long)r * k + kc) : 0.0f;
		}
		for (int i = threadIdx.x; i < GMM_TK * GMM_TN; i += blockDim.x) {
			int kk, cc;
			if (transB) { // B_e is n × k: consecutive threads read along k
				cc = i / GMM_TK;
				kk = i % GMM_TK;
			} else {
				kk = i / GMM_TN;
				cc = i % GMM_TN;
			}
			int col = c0 + cc, kc = k0 + kk;
			float v = 0.0f;
			if (col < n && kc < k) v = transB ? ldc(be, (long long)col * k + kc) : ldc(be, (long long)kc * n + col);
			Bs[kk][cc] = v;
		}
		__syncthreads();
		for (int kk = 0; kk < GMM_TK; kk++) {
			float av[4], bv[4];
			for (int i = 0; i < 4; i++) av[i] = As[kk][ty * 4 + i];
			for (int j = 0; j < 4; j++) bv[j] = Bs[kk][tx * 4 + j];
			for (int i = 0; i < 4; i++)
				for (int j = 0; j < 4; j++) acc[i][j] += av[i] * bv[j];
		}
		__syncthreads();
	}
	for (int i = 0; i < 4; i++) {
		int r = r0 + ty * 4 + i;
		if (r >= rEnd) break;
		for (int j = 0; j < 4; j++) {
			int col = c0 + tx * 4 + j;
			if (col >= n) break;
			long long o = (long long)r * n + col;
			float v = alpha * acc[i][j];
			if (beta != 0.0f) v += beta * ldc(c, o);
			st_as(c, sizeof(C) == 2, o, v);
		}
	}
}

// grouped_matmul_f32 multiplies by f32 expert matrices (the experts'
// LoRA factors); the suffixed kernels take a bf16 A, a bf16 C, or both.
#define GROUPED_MATMUL_F32(name, A, C) \
	GRPO_KERNEL void __launch_bounds__(256) name(C* c, const A* a, const float* b, const int* offsets, int nExperts, int n, int k, \
						     int transB, float alpha, float beta) { \
		grouped_matmul(c, a, b, offsets, nExperts, n, k, transB, alpha, beta); \
	}
GROUPED_MATMUL_F32(grouped_matmul_f32, float, float)
GROUPED_MATMUL_F32(grouped_matmul_f32_abf16, __nv_bfloat16, float)
GROUPED_MATMUL_F32(grouped_matmul_f32_cbf16, float, __nv_bfloat16)
GROUPED_MATMUL_F32(grouped_matmul_f32_abf16_cbf16, __nv_bfloat16, __nv_bfloat16)

// grid (⌈m·n/256⌉, nExperts), block (256): one element of C_e per thread,
// summed over the expert's rows in order. A and B are f32 or bf16 (read
// widened); C is f32.
template <class A, class B>
__device__ __forceinline__ void grouped_matmul_tn(float* c, const A* a, const B* b, const int* offsets, int m, int n, float alpha, float beta) {
	int e = blockIdx.y;
	long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x;
	if (idx >= (long long)m * n) return;
	int i = idx / n, j = idx % n;
	float s = 0.0f;
	for (int r = offsets[e]; r < offsets[e + 1]; r++) s += ld(a, (long long)r * m + i) * ld(b, (long long)r * n + j);
	float* ce = c + (long long)e * m * n + idx;
	float v = alpha * s;
	if (beta != 0.0f) v += beta * *ce;
	*ce = v;
}
#define GROUPED_MATMUL_TN(name, A, B) \
	GRPO_KERNEL void __launch_bounds__(256) name(float* c, const A* a, const B* b, const int* offsets, int m, int n, float alpha, \
						     float beta) { \
		grouped_matmul_tn(c, a, b, offsets, m, n, alpha, beta); \
	}
GROUPED_MATMUL_TN(grouped_matmul_tn_f32, float, float)
GROUPED_MATMUL_TN(grouped_matmul_tn_f32_abf16, __nv_bfloat16, float)
GROUPED_MATMUL_TN(grouped_matmul_tn_f32_bbf16, float, __nv_bfloat16)
GROUPED_MATMUL_TN(grouped_matmul_tn_f32_abf16_bbf16, __nv_bfloat16, __nv_bfloat16)

// grid (n), block (any): out[t] = Σ_j w_j·x[rows[t·topK + j]]; weights
// may be null (unit weights).
GRPO_KERNEL void __launch_bounds__(256) moe_combine_f32(float* out, const float* x, const float* weights, const int* rows, int topK,
							int cols) {
	long long t = blockIdx.x;
	for (int col = threadIdx.x; col < cols; col += blockDim.x) {
		float s = 0.0f;
		for (int j = 0; j < topK; j++) {
			float w = weights ? weights[t * topK + j] : 1.0f;
			s += w * x[(long long)rows[t * topK + j] * cols + col];
		}
		out[t * cols + col] = s;
	}
}

// grid (n·topK), block (a multiple of 32): one assignment per block.
GRPO_KERNEL void __launch_bounds__(256) moe_combine_backward_f32(float* dx, float* dweights, const float* dout, const float* x,
								 const float* weights, const int* rows, int topK, int cols) {
	GRPO_SHARED(float, scratch, [32]);
	long long a = blockIdx.x, t = a / topK, r = rows[a];
	float w = weights[a], dot = 0.0f;
	for (int col = threadIdx.x; col < cols; col += blockDim.x) {
		float d = dout[t * cols + col];
		dx[r * cols + col] = w * d;
		dot += d * x[r * cols + col];
	}
	dot = block_sum(dot, scratch);
	if (threadIdx.x == 0) dweights[a] = dot;
}

// moe_combine_as is moe_combine_f32 with out and x each f32 or bf16 (bit 0
// of bf16: out, 1: x): the same f32 sum, rounded once at the store.
GRPO_KERNEL void __launch_bounds__(256) moe_combine_as(void* out, const void* x, const float* weights, const int* rows, int topK,
						       int cols, int bf16) {
	long long t = blockIdx.x;
	for (int col = threadIdx.x; col < cols; col += blockDim.x) {
		float s = 0.0f;
		for (int j = 0; j < topK; j++) {
			float w = weights ? weights[t * topK + j] : 1.0f;
			s += w * ld_as(x, bf16 & 2, (long long)rows[t * topK + j] * cols + col);
		}
		st_as(out, bf16 & 1, t * cols + col, s);
	}
}

// moe_combine_backward_as is moe_combine_backward_f32 with dx, dout and x
// each f32 or bf16 (bit 0 of bf16: dx, 1: dout, 2: x); dweights stays f32.
GRPO_KERNEL void __launch_bounds__(256) moe_combine_backward_as(void* dx, float* dweights, const void* dout, const void* x,
								const float* weights, const int* rows, int topK, int cols, int bf16) {
	GRPO_SHARED(float, scratch, [32]);
	long long a = blockIdx.x, t = a / topK, r = rows[a];
	float w = weights[a], dot = 0.0f;
	for (int col = threadIdx.x; col < cols; col += blockDim.x) {
		float d = ld_as(dout, bf16 & 2, t * cols + col);
		st_as(dx, bf16 & 1, r * cols + col, w * d);
		dot += d * ld_as(x, bf16 & 4, r * cols + col);
	}
	dot = block_sum(dot, scratch);
	if (threadIdx.x == 0) dweights[a] = dot;
}
