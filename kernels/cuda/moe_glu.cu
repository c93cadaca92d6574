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

// grid (rows), block (any): y[r] += bias[e] for the expert e whose rows
// [offsets[e], offsets[e+1]) hold r: the last e with offsets[e] ≤ r,
// which has rows (an empty expert's offsets equal the next one's). Rows
// outside [offsets[0], offsets[nExperts]) — offsets a run of a grouping
// over more experts — are left as they are.
GRPO_KERNEL void __launch_bounds__(256) grouped_add_bias_f32(float* y, const float* bias, const int* offsets, int nExperts, int cols) {
	int r = blockIdx.x;
	if (r < offsets[0] || r >= offsets[nExperts]) return;
	int lo = 0, hi = nExperts;
	while (hi - lo > 1) {
		int mid = (lo + hi) / 2;
		if (offsets[mid] <= r) {
			lo = mid;
		} else {
			hi = mid;
		}
	}
	const float* b = bias + (long long)lo * cols;
	float* yr = y + (long long)r * cols;
	for (int col = threadIdx.x; col < cols; col += blockDim.x) yr[col] += b[col];
}
