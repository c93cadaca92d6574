// fused.cu: the fused ops (kernels.FusedOps) and SwiGLURows' backward.
// add_rmsnorm: grid (rows), block (256: a multiple of 32), as rmsnorm.cu;
// the SwiGLU kernels: one thread per element with a grid-stride loop.
// Activations may be bf16 between ops (a bf16 model's training step): a
// bf16 operand is read widened to f32, all arithmetic is f32, and a bf16
// output is rounded once, at its store (store_act).
// nvcc -ptx -arch=compute_90 fused.cu
#include "common.cuh"

// store_act writes an activation (or a cache or q element): f32 as it is,
// bf16 rounded to nearest even (as kv_write_bf16).
__device__ __forceinline__ void store_act(float* p, long long i, float v) { p[i] = v; }
__device__ __forceinline__ void store_act(__nv_bfloat16* p, long long i, float v) { p[i] = __float2bfloat16_rn(v); }

// The residual add and the norm: each thread adds, writes and squares the
// same columns, then normalises them, so sum may alias x or r (an f32 r),
// and out may alias x when r is null (no add; sum is null too). r may be
// bf16 (the o_proj or down_proj GEMM's bf16 output), read widened; the sum
// is f32 either way. out_bf16, when not null, gets the very value written
// to out, rounded to nearest even; out may be null when out_bf16 is not
// (only the bf16 copy is stored).
template <class W, class R>
__device__ __forceinline__ void add_rmsnorm(float* sum, float* out, __nv_bfloat16* out_bf16, float* rstd, const float* x,
					    const R* r, const W* w, int dim, float eps) {
	GRPO_SHARED(float, scratch, [32]);
	long long row = blockIdx.x * (long long)dim;
	const float* s = r ? sum + row : x + row;
	float ss = 0.0f;
	for (int i = threadIdx.x; i < dim; i += blockDim.x) {
		float v = x[row + i];
		if (r) {
			v += ld(r, row + i);
			sum[row + i] = v;
		}
		ss += v * v;
	}
	ss = block_sum(ss, scratch);
	float rs = rsqrtf(ss / dim + eps);
	if (rstd && threadIdx.x == 0) rstd[blockIdx.x] = rs;
	for (int i = threadIdx.x; i < dim; i += blockDim.x) {
		float v = s[i] * rs * ld(w, i);
		if (out) out[row + i] = v;
		if (out_bf16) out_bf16[row + i] = __float2bfloat16_rn(v);
	}
}

// Named for the weights' dtype (f32, wbf16), with _rbf16 a bf16 r.
#define ADD_RMSNORM(name, W, R)                                                                                             \
	GRPO_KERNEL void __launch_bounds__(256) name(float* sum, float* out, __nv_bfloat16* out_bf16, float* rstd, const float* x, \
						      const R* r, const W* w, int rows, int dim, float eps) {                    \
		add_rmsnorm(sum, out, out_bf16, rstd, x, r, w, dim, eps);                                                   \
	}
ADD_RMSNORM(add_rmsnorm_f32, float, float)
ADD_RMSNORM(add_rmsnorm_wbf16, __nv_bfloat16, float)
ADD_RMSNORM(add_rmsnorm_f32_rbf16, float, __nv_bfloat16)
ADD_RMSNORM(add_rmsnorm_wbf16_rbf16, __nv_bfloat16, __nv_bfloat16)

#define GRID_STRIDE(i, n) \
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); i += (long long)gridDim.x * blockDim.x)

// out[r, j] = silu(gate) · up with gate = gate_up[r, j] and up = gate_up[r,
// width + j]; silu as swiglu_f32 (elementwise.cu). gate_up may be bf16
// (the gate/up GEMM's bf16 output); out may be null when out_bf16 is not.
template <class G>
__device__ __forceinline__ void swiglu_rows(float* out, __nv_bfloat16* out_bf16, const G* gate_up, int rows, int width) {
	GRID_STRIDE(i, (long long)rows * width) {
		long long r = i / width, j = i % width;
		float g = ld(gate_up, 2 * r * width + j), u = ld(gate_up, (2 * r + 1) * width + j);
		float v = g / (1.0f + expf(-g)) * u;
		if (out) out[i] = v;
		if (out_bf16) out_bf16[i] = __float2bfloat16_rn(v);
	}
}
// Named for gate_up's dtype.
GRPO_KERNEL void __launch_bounds__(256) swiglu_rows_f32(float* out, __nv_bfloat16* out_bf16, const float* gate_up, int rows, int width) {
	swiglu_rows(out, out_bf16, gate_up, rows, width);
}
GRPO_KERNEL void __launch_bounds__(256) swiglu_rows_bf16(float* out, __nv_bfloat16* out_bf16, const __nv_bfloat16* gate_up, int rows,
							  int width) {
	swiglu_rows(out, out_bf16, gate_up, rows, width);
}

// SwiGLURows' backward, with swiglu_backward_f32's formulas
// (train_elementwise.cu): dgate into the first half of each row of
// d_gate_up, dup into the second. dy, gate_up and d_gate_up are each f32
// or bf16: read widened, the gradients formed in f32 and stored rounded
// once.
template <class D, class Y, class G>
__device__ __forceinline__ void swiglu_rows_backward(D* d_gate_up, const Y* dy, const G* gate_up, int rows, int width) {
	GRID_STRIDE(i, (long long)rows * width) {
		long long r = i / width, j = i % width;
		long long gi = 2 * r * width + j, ui = gi + width;
		float g = ld(gate_up, gi), u = ld(gate_up, ui), d = ld(dy, i);
		float e = expf(-fabsf(g));
		float q = 1.0f / (1.0f + e);
		float sig = g >= 0.0f ? q : e * q;  // σ(g)
		float om = g >= 0.0f ? e * q : q;   // 1 − σ(g)
		store_act(d_gate_up, gi, d * u * (sig * (1.0f + g * om)));
		store_act(d_gate_up, ui, d * (g * sig));
	}
}
// Named swiglu_rows_backward_f32 with a suffix per bf16 operand: _dbf16
// (d_gate_up), _dybf16, _gubf16 (gate_up), in that order.
#define SWIGLU_ROWS_BACKWARD(name, D, Y, G)                                                                           \
	GRPO_KERNEL void __launch_bounds__(256) name(D* d_gate_up, const Y* dy, const G* gate_up, int rows, int width) { \
		swiglu_rows_backward(d_gate_up, dy, gate_up, rows, width);                                             \
	}
SWIGLU_ROWS_BACKWARD(swiglu_rows_backward_f32, float, float, float)
SWIGLU_ROWS_BACKWARD(swiglu_rows_backward_f32_dbf16, __nv_bfloat16, float, float)
SWIGLU_ROWS_BACKWARD(swiglu_rows_backward_f32_dybf16, float, __nv_bfloat16, float)
SWIGLU_ROWS_BACKWARD(swiglu_rows_backward_f32_gubf16, float, float, __nv_bfloat16)
SWIGLU_ROWS_BACKWARD(swiglu_rows_backward_f32_dbf16_dybf16, __nv_bfloat16, __nv_bfloat16, float)
SWIGLU_ROWS_BACKWARD(swiglu_rows_backward_f32_dbf16_gubf16, __nv_bfloat16, float, __nv_bfloat16)
SWIGLU_ROWS_BACKWARD(swiglu_rows_backward_f32_dybf16_gubf16, float, __nv_bfloat16, __nv_bfloat16)
SWIGLU_ROWS_BACKWARD(swiglu_rows_backward_f32_dbf16_dybf16_gubf16, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16)

// act_operand is an activation operand of AttentionInputs or its backward
// (qkv, gate, qPre, kPre; dqkv, dq, dgate, qPre, kPre) that is f32 or
// bf16 by a bit of the kernel's act_bf16 mask: a bf16 model keeps them in
// bf16 between ops. The bit is uniform over the grid, so one kernel serves
// every mix without a branch that diverges. Reads widen to f32; stores
// round to nearest even, once, as kv_write_bf16.
struct act_operand {
	void* p;
	bool bf;
	__device__ __forceinline__ act_operand(const void* ptr, int mask, int bit) : p(const_cast<void*>(ptr)), bf((mask & bit) != 0) {}
	// at is the operand from element i on (p not null).
	__device__ __forceinline__ act_operand at(long long i) const {
		act_operand a = *this;
		a.p = bf ? static_cast<void*>(static_cast<__nv_bfloat16*>(p) + i) : static_cast<void*>(static_cast<float*>(p) + i);
		return a;
	}
	__device__ __forceinline__ float ld(long long i) const {
		return bf ? __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]) : static_cast<const float*>(p)[i];
	}
	__device__ __forceinline__ void st(long long i, float v) const {
		if (bf)
			static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
		else
			static_cast<float*>(p)[i] = v;
	}
};

// AttentionInputs. grid (nTok, nHead + 2·nKV): block (t, h) takes head h
// of token t's fused q/k/v row — a q head for h < nHead (with its output
// gate after it when gate is not null), then the k and the v heads — one
// thread per rotated pair (i, i + rotary_dim/2), then per unrotated dim
// (partial rotary: dims from rotary_dim on), in strided loops. Each step
// is the unfused kernel's arithmetic: the bias added as add_bias, the
// norm as rmsnorm.cu's (a block_sum of squares over the whole head, then
// x·rs·w), the rotation as rope_f32's. Which part a block takes is
// uniform over the block, so the block_sum is reached by every thread or
// by none. act_bf16 says which of qkv, gate, q_pre, k_pre are bf16
// (ATTENTION_INPUTS_*_BF16); q and the caches are stored with store_act.
enum { ATTENTION_INPUTS_QKV_BF16 = 1, ATTENTION_INPUTS_GATE_BF16 = 2, ATTENTION_INPUTS_QPRE_BF16 = 4, ATTENTION_INPUTS_KPRE_BF16 = 8 };

template <class W, class C, class Q>
__device__ __forceinline__ void attention_inputs(Q* q, void* gate, void* q_pre, void* k_pre, float* rstd_q, float* rstd_k,
						 C* k_cache, C* v_cache, const void* qkv, const W* q_bias, const W* k_bias,
						 const W* v_bias, const W* q_norm, const W* k_norm, const float* inv_freq, const int* seq,
						 const int* pos, const int* table, int n_head, int n_kv, int head_dim, int rotary_dim,
						 int block_size, int max_blocks, float eps, int act_bf16) {
	GRPO_SHARED(float, scratch, [32]);
	int t = blockIdx.x, h = blockIdx.y, half = rotary_dim / 2;
	const act_operand in(qkv, act_bf16, ATTENTION_INPUTS_QKV_BF16);
	// A gated q head is the query followed by its gate: q_stride wide.
	long long q_stride = gate ? 2LL * head_dim : head_dim, qw = n_head * q_stride, kd = (long long)n_kv * head_dim;
	long long row = t * (qw + 2 * kd); // token t's row of qkv
	long long cache_row = kv_row(table, seq[t], pos[t], block_size, max_blocks) * n_kv;
	long long src; // the head's offset in qkv
	const W* bias;
	const W* norm;
	float* rstd;
	act_operand pre(nullptr, 0, 0);
	Q* qd = nullptr;
	C* kdst = nullptr;
	if (h < n_head) {
		long long th = (long long)t * n_head + h;
		src = row + h * q_stride;
		bias = q_bias ? q_bias + h * q_stride : nullptr;
		norm = q_norm;
		qd = q + th * head_dim;
		if (q_pre) pre = act_operand(q_pre, act_bf16, ATTENTION_INPUTS_QPRE_BF16).at(th * head_dim);
		rstd = rstd_q ? rstd_q + th : nullptr;
		if (gate) {
			const act_operand gd(gate, act_bf16, ATTENTION_INPUTS_GATE_BF16);
			for (int i = threadIdx.x; i < head_dim; i += blockDim.x)
				gd.st(th * head_dim + i, bias ? in.ld(src + head_dim + i) + ld(bias, head_dim + i) : in.ld(src + head_dim + i));
		}
	} else if (h < n_head + n_kv) {
		int j = h - n_head;
		long long tj = (long long)t * n_kv + j;
		src = row + qw + (long long)j * head_dim;
		bias = k_bias ? k_bias + (long long)j * head_dim : nullptr;
		norm = k_norm;
		kdst = k_cache + (cache_row + j) * head_dim;
		if (k_pre) pre = act_operand(k_pre, act_bf16, ATTENTION_INPUTS_KPRE_BF16).at(tj * head_dim);
		rstd = rstd_k ? rstd_k + tj : nullptr;
	} else {
		int j = h - n_head - n_kv;
		src = row + qw + kd + (long long)j * head_dim;
		const W* vb = v_bias ? v_bias + (long long)j * head_dim : nullptr;
		C* vd = v_cache + (cache_row + j) * head_dim;
		for (int i = threadIdx.x; i < head_dim; i += blockDim.x) store_act(vd, i, vb ? in.ld(src + i) + ld(vb, i) : in.ld(src + i));
		return;
	}
	float rs = 1.0f;
	if (norm) {
		float ss = 0.0f;
		for (int i = threadIdx.x; i < head_dim; i += blockDim.x) {
			float v = bias ? in.ld(src + i) + ld(bias, i) : in.ld(src + i);
			ss += v * v;
		}
		ss = block_sum(ss, scratch);
		rs = rsqrtf(ss / head_dim + eps);
		if (rstd && threadIdx.x == 0) *rstd = rs;
	}
	for (int i = threadIdx.x; i < half; i += blockDim.x) {
		float x1 = bias ? in.ld(src + i) + ld(bias, i) : in.ld(src + i);
		float x2 = bias ? in.ld(src + i + half) + ld(bias, i + half) : in.ld(src + i + half);
		if (pre.p) {
			pre.st(i, x1);
			pre.st(i + half, x2);
		}
		if (norm) {
			x1 = x1 * rs * ld(norm, i);
			x2 = x2 * rs * ld(norm, i + half);
		}
		float ang = (float)pos[t] * inv_freq[i];
		float s, c;
		sincosf(ang, &s, &c);
		float y1 = x1 * c - x2 * s, y2 = x2 * c + x1 * s;
		if (qd) {
			store_act(qd, i, y1);
			store_act(qd, i + half, y2);
		} else {
			store_act(kdst, i, y1);
			store_act(kdst, i + half, y2);
		}
	}
	for (int i = rotary_dim + threadIdx.x; i < head_dim; i += blockDim.x) {
		float x = bias ? in.ld(src + i) + ld(bias, i) : in.ld(src + i);
		if (pre.p) pre.st(i, x);
		if (norm) x = x * rs * ld(norm, i);
		if (qd)
			store_act(qd, i, x);
		else
			store_act(kdst, i, x);
	}
}

#define ATTENTION_INPUTS_PARAMS(W, C, Q)                                                                                      \
	Q *q, void *gate, void *q_pre, void *k_pre, float *rstd_q, float *rstd_k, C *k_cache, C *v_cache,                    \
		const void *qkv, const W *q_bias, const W *k_bias, const W *v_bias, const W *q_norm, const W *k_norm,             \
		const float *inv_freq, const int *seq, const int *pos, const int *table, int n_tok, int n_head, int n_kv,         \
		int head_dim, int rotary_dim, int block_size, int max_blocks, float eps, int act_bf16
#define ATTENTION_INPUTS_ARGS                                                                                                   \
	q, gate, q_pre, k_pre, rstd_q, rstd_k, k_cache, v_cache, qkv, q_bias, k_bias, v_bias, q_norm, k_norm, inv_freq, seq, pos, \
		table, n_head, n_kv, head_dim, rotary_dim, block_size, max_blocks, eps, act_bf16
// Named for the weights' dtype (biases and norms: f32, wbf16), with
// _kvbf16 a bf16 cache (the sampler's on a GPU) and with _kvbf16_qbf16 a
// bf16 q too (a bf16 model's training trace: the tensor-core attention
// reads q and the caches in bf16, so q is rounded here once, as k and v).
GRPO_KERNEL void __launch_bounds__(128) attention_inputs_f32(ATTENTION_INPUTS_PARAMS(float, float, float)) {
	attention_inputs(ATTENTION_INPUTS_ARGS);
}
GRPO_KERNEL void __launch_bounds__(128) attention_inputs_wbf16(ATTENTION_INPUTS_PARAMS(__nv_bfloat16, float, float)) {
	attention_inputs(ATTENTION_INPUTS_ARGS);
}
GRPO_KERNEL void __launch_bounds__(128) attention_inputs_f32_kvbf16(ATTENTION_INPUTS_PARAMS(float, __nv_bfloat16, float)) {
	attention_inputs(ATTENTION_INPUTS_ARGS);
}
GRPO_KERNEL void __launch_bounds__(128) attention_inputs_wbf16_kvbf16(ATTENTION_INPUTS_PARAMS(__nv_bfloat16, __nv_bfloat16, float)) {
	attention_inputs(ATTENTION_INPUTS_ARGS);
}
GRPO_KERNEL void __launch_bounds__(128)
    attention_inputs_f32_kvbf16_qbf16(ATTENTION_INPUTS_PARAMS(float, __nv_bfloat16, __nv_bfloat16)) {
	attention_inputs(ATTENTION_INPUTS_ARGS);
}
GRPO_KERNEL void __launch_bounds__(128)
    attention_inputs_wbf16_kvbf16_qbf16(ATTENTION_INPUTS_PARAMS(__nv_bfloat16, __nv_bfloat16, __nv_bfloat16)) {
	attention_inputs(ATTENTION_INPUTS_ARGS);
}

// AttentionInputsBackward. grid (nTok, nHead + 2·nKV), as attention_inputs:
// block (t, h) writes head h of dqkv's row t. q and k heads: the gradient
// (dq, or dk_cache at the token's cache row) rotated back as rope_f32 with
// inverse on the first rotary_dim dims (the others as they are), then,
// with a norm, rmsnorm_backward.cu's float64 formula (the dot product
// over the head in a block_sum_f64, the rotation recomputed in the second
// pass); a q head's gate half: dgate's head as it is; v heads: dv_cache's
// row as it is. act_bf16 says which of dqkv, dq, dgate, q_pre, k_pre are
// bf16 (ATTENTION_INPUTS_BACKWARD_*_BF16); each element of dqkv is
// written once, so a bf16 dqkv is rounded once, after all of it.
enum {
	ATTENTION_INPUTS_BACKWARD_DQKV_BF16 = 1,
	ATTENTION_INPUTS_BACKWARD_DQ_BF16 = 2,
	ATTENTION_INPUTS_BACKWARD_DGATE_BF16 = 4,
	ATTENTION_INPUTS_BACKWARD_QPRE_BF16 = 8,
	ATTENTION_INPUTS_BACKWARD_KPRE_BF16 = 16,
};

// rotated_grad is element i of a head's gradient src rotated back: rotated
// by −angle for the pairs (i < half: with i + half), as it is from
// rotary_dim on.
__device__ __forceinline__ float rotated_grad(act_operand src, const float* inv_freq, int p, int i, int half) {
	if (i >= 2 * half) return src.ld(i);
	int k = i < half ? i : i - half;
	float ang = (float)p * inv_freq[k];
	float s, co;
	sincosf(ang, &s, &co);
	s = -s;
	float a = src.ld(i), b = src.ld(i < half ? i + half : i - half);
	return i < half ? a * co - b * s : a * co + b * s;
}

template <class W>
__device__ __forceinline__ void attention_inputs_backward(void* dqkv, const void* dq, const void* dgate, const float* dk_cache,
							  const float* dv_cache, const void* q_pre, const void* k_pre,
							  const float* rstd_q, const float* rstd_k, const W* q_norm, const W* k_norm,
							  const float* inv_freq, const int* seq, const int* pos, const int* table,
							  int n_head, int n_kv, int head_dim, int rotary_dim, int block_size, int max_blocks,
							  int act_bf16) {
	GRPO_SHARED(double, scratch, [32]);
	int t = blockIdx.x, h = blockIdx.y, half = rotary_dim / 2;
	long long q_stride = dgate ? 2LL * head_dim : head_dim, qw = n_head * q_stride, kd = (long long)n_kv * head_dim;
	const act_operand out = act_operand(dqkv, act_bf16, ATTENTION_INPUTS_BACKWARD_DQKV_BF16).at(t * (qw + 2 * kd));
	long long cache_row = kv_row(table, seq[t], pos[t], block_size, max_blocks) * n_kv;
	act_operand src(nullptr, 0, 0), x(nullptr, 0, 0);
	long long dst; // the head's offset in out
	const W* norm;
	double r = 0.0;
	if (h < n_head) {
		long long th = (long long)t * n_head + h;
		src = act_operand(dq, act_bf16, ATTENTION_INPUTS_BACKWARD_DQ_BF16).at(th * head_dim);
		dst = h * q_stride;
		norm = q_norm;
		if (norm) x = act_operand(q_pre, act_bf16, ATTENTION_INPUTS_BACKWARD_QPRE_BF16).at(th * head_dim), r = rstd_q[th];
		if (dgate) {
			const act_operand dg = act_operand(dgate, act_bf16, ATTENTION_INPUTS_BACKWARD_DGATE_BF16).at(th * head_dim);
			for (int i = threadIdx.x; i < head_dim; i += blockDim.x) out.st(dst + head_dim + i, dg.ld(i));
		}
	} else if (h < n_head + n_kv) {
		int j = h - n_head;
		long long tj = (long long)t * n_kv + j;
		src = act_operand(dk_cache + (cache_row + j) * head_dim, 0, 0);
		dst = qw + (long long)j * head_dim;
		norm = k_norm;
		if (norm) x = act_operand(k_pre, act_bf16, ATTENTION_INPUTS_BACKWARD_KPRE_BF16).at(tj * head_dim), r = rstd_k[tj];
	} else {
		int j = h - n_head - n_kv;
		const float* dv = dv_cache + (cache_row + j) * head_dim;
		dst = qw + kd + (long long)j * head_dim;
		for (int i = threadIdx.x; i < head_dim; i += blockDim.x) out.st(dst + i, dv[i]);
		return;
	}
	// Each thread rotates back its own elements of the head (reading a
	// pair's partner from src), so no thread waits for another's result.
	double c = 0.0;
	if (norm) {
		double dot = 0.0;
		for (int i = threadIdx.x; i < head_dim; i += blockDim.x)
			dot += (double)ld(norm, i) * rotated_grad(src, inv_freq, pos[t], i, half) * x.ld(i);
		dot = block_sum_f64(dot, scratch);
		c = r * r * r * (dot / head_dim);
	}
	for (int i = threadIdx.x; i < head_dim; i += blockDim.x) {
		float g = rotated_grad(src, inv_freq, pos[t], i, half);
		out.st(dst + i, norm ? (float)(r * ld(norm, i) * g - x.ld(i) * c) : g);
	}
}

#define ATTENTION_INPUTS_BACKWARD_PARAMS(W)                                                                                    \
	void *dqkv, const void *dq, const void *dgate, const float *dk_cache, const float *dv_cache, const void *q_pre,       \
		const void *k_pre, const float *rstd_q, const float *rstd_k, const W *q_norm, const W *k_norm,                     \
		const float *inv_freq, const int *seq, const int *pos, const int *table, int n_tok, int n_head, int n_kv,          \
		int head_dim, int rotary_dim, int block_size, int max_blocks, int act_bf16
#define ATTENTION_INPUTS_BACKWARD_ARGS                                                                                            \
	dqkv, dq, dgate, dk_cache, dv_cache, q_pre, k_pre, rstd_q, rstd_k, q_norm, k_norm, inv_freq, seq, pos, table, n_head, n_kv, \
		head_dim, rotary_dim, block_size, max_blocks, act_bf16
GRPO_KERNEL void __launch_bounds__(128) attention_inputs_backward_f32(ATTENTION_INPUTS_BACKWARD_PARAMS(float)) {
	attention_inputs_backward(ATTENTION_INPUTS_BACKWARD_ARGS);
}
GRPO_KERNEL void __launch_bounds__(128) attention_inputs_backward_wbf16(ATTENTION_INPUTS_BACKWARD_PARAMS(__nv_bfloat16)) {
	attention_inputs_backward(ATTENTION_INPUTS_BACKWARD_ARGS);
}
