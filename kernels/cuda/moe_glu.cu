// moe_glu.cu: gpt-oss's expert activation, the clamped SwiGLU
// (kernels.ClampedGLU) and its backward, one thread per element with a
// grid-stride loop; and the per-expert bias of the grouped rows.
// nvcc -ptx -arch=compute_90 moe_glu.cu
#include "common.cuh"

#define GRID_STRIDE(i, n) \
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); i += (long long)gridDim.x * blockDim.x)

// σ(x) and 1 − σ(x), both from e = e^−|x| ≤ 1: neither overflows and
// 1 − σ has no cancellation (as swiglu_backward_f32).
__device__ __forceinline__ void glu_sigmoid(float x, float* sig, float* om) {
	float e = expf(-fabsf(x));
	float r = 1.0f / (1.0f + e);
	*sig = x >= 0.0f ? r : e * r;
	*om = x >= 0.0f ? e * r : r;
}

// out = (u + 1)·g·σ(αg), g = min(gate, limit), u = clamp(up, ±limit).
GRPO_KERNEL void __launch_bounds__(256) clamped_swiglu_f32(float* out, const float* gate, const float* up, int n, float alpha,
							  float limit) {
	GRID_STRIDE(i, n) {
		float g = fminf(gate[i], limit);
		float u = fmaxf(fminf(up[i], limit), -limit);
		float sig, om;
		glu_sigmoid(alpha * g, &sig, &om);
		out[i] = (u + 1.0f) * (g * sig);
	}
}

// dgate = dy·(u + 1)·σ(αg)·(1 + αg·(1 − σ(αg))) where gate ≤ limit, dup =
// dy·g·σ(αg) where −limit ≤ up ≤ limit (torch's clamp passes gradient at
// its bounds). Each thread reads gate and up before writing dgate and dup
// at the same index, so they may alias.
GRPO_KERNEL void __launch_bounds__(256) clamped_swiglu_backward_f32(float* dgate, float* dup, const float* dy, const float* gate,
								   const float* up, int n, float alpha, float limit) {
	GRID_STRIDE(i, n) {
		float graw = gate[i], uraw = up[i], d = dy[i];
		float g = fminf(graw, limit);
		float u = fmaxf(fminf(uraw, limit), -limit);
		float sig, om;
		glu_sigmoid(alpha * g, &sig, &om);
		dgate[i] = graw <= limit ? d * (u + 1.0f) * (sig * (1.0f + alpha * g * om)) : 0.0f;
		dup[i] = uraw >= -limit && uraw <= limit ? d * (g * sig) : 0.0f;
	}
}

// clamped_swiglu_as and clamped_swiglu_backward_as are the kernels above
// with each operand f32 or bf16 (bits of bf16 in argument order: out,
// gate, up; dgate, dup, dy, gate, up), read widened and stored rounded
// once; still read before written, so an aliased pair of one dtype works.
GRPO_KERNEL void __launch_bounds__(256) clamped_swiglu_as(void* out, const void* gate, const void* up, int n, float alpha, float limit,
							 int bf16) {
	GRID_STRIDE(i, n) {
		float g = fminf(ld_as(gate, bf16 & 2, i), limit);
		float u = fmaxf(fminf(ld_as(up, bf16 & 4, i), limit), -limit);
		float sig, om;
		glu_sigmoid(alpha * g, &sig, &om);
		st_as(out, bf16 & 1, i, (u + 1.0f) * (g * sig));
	}
}
GRPO_KERNEL void __launch_bounds__(256) clamped_swiglu_backward_as(void* dgate, void* dup, const void* dy, const void* gate,
								  const void* up, int n, float alpha, float limit, int bf16) {
	GRID_STRIDE(i, n) {
		float graw = ld_as(gate, bf16 & 8, i), uraw = ld_as(up, bf16 & 16, i), d = ld_as(dy, bf16 & 4, i);
		float g = fminf(graw, limit);
		float u = fmaxf(fminf(uraw, limit), -limit);
		float sig, om;
		glu_sigmoid(alpha * g, &sig, &om);
		st_as(dgate, bf16 & 1, i, graw <= limit ? d * (u + 1.0f) * (sig * (1.0f + alpha * g * om)) : 0.0f);
		st_as(dup, bf16 & 2, i, uraw >= -limit && uraw <= limit ? d * (g * sig) : 0.0f);
	}
}

// grouped_row_expert is the expert e whose rows [offsets[e], offsets[e+1])
// hold r: the last e with offsets[e] ≤ r, which has rows (an empty
// expert's offsets equal the next one's).
__device__ __forceinline__ int grouped_row_expert(int r, const int* offsets, int nExperts) {
	int lo = 0, hi = nExperts;
	while (hi - lo > 1) {
		int mid = (lo + hi) / 2;
		if (offsets[mid] <= r) {
			lo = mid;
		} else {
			hi = mid;
		}
	}
	return lo;
}
// grid (rows), block (any): y[r] += bias[e] for the expert e holding r.
// Rows outside [offsets[0], offsets[nExperts]) — offsets a run of a
// grouping over more experts — are left as they are.
GRPO_KERNEL void __launch_bounds__(256) grouped_add_bias_f32(float* y, const float* bias, const int* offsets, int nExperts, int cols) {
	int r = blockIdx.x;
	if (r < offsets[0] || r >= offsets[nExperts]) return;
	int lo = grouped_row_expert(r, offsets, nExperts);
	const float* b = bias + (long long)lo * cols;
	float* yr = y + (long long)r * cols;
	for (int col = threadIdx.x; col < cols; col += blockDim.x) yr[col] += b[col];
}
// grouped_add_bias_ybf16 is grouped_add_bias_f32 over a bf16 y: the sum in
// f32, rounded once at the store.
GRPO_KERNEL void __launch_bounds__(256) grouped_add_bias_ybf16(__nv_bfloat16* y, const float* bias, const int* offsets, int nExperts,
							       int cols) {
	int r = blockIdx.x;
	if (r < offsets[0] || r >= offsets[nExperts]) return;
	int lo = grouped_row_expert(r, offsets, nExperts);
	const float* b = bias + (long long)lo * cols;
	__nv_bfloat16* yr = y + (long long)r * cols;
	for (int col = threadIdx.x; col < cols; col += blockDim.x) yr[col] = __float2bfloat16_rn(__bfloat162float(yr[col]) + b[col]);
}
