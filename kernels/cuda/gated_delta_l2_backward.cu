// gated_delta_l2_backward.cu: the last step of the gated delta rule's
// backward (kernels.LinearOps.GatedDeltaRuleBackward): the q̂ and k̂
// gradients gated_delta_chunked_backward_f32 leaves per value head, summed
// over each key head's value heads and taken through the l2 norms. Its
// CPU twin is l2Backward in kernels/cpu/linear_delta_backward.go.
// gated_delta_l2_backward_as takes dqkv and qkv each f32 or bf16 (act
// bits 0 and 2, as gated_delta_chunked_backward_as numbers them).
// nvcc -ptx -arch=compute_90 gated_delta_l2_backward.cu
#include "linear.cuh"

// grid (nTok, nHeadK), block (128): dq̂ and dk̂ summed over the key head's
// value heads, through q̂ = q·r/sqrt(dimK) and k̂ = k·r with r =
// 1/sqrt(Σx² + 1e-6): dx = scale·(r·dxh − x·r³·(x·dxh)).
template <bool AS>
__device__ __forceinline__ void gated_delta_l2_backward(void* dqkv, const float* dqh, const float* dkh, const void* qkv, int nHeadK, int nHeadV,
							int dimK, int dimV, int act) {
	GRPO_SHARED(float, scratch, [32]);
	DeltaDims d = {nHeadK, nHeadV, dimK, dimV};
	long long t = blockIdx.x, width = d.width();
	int kh = blockIdx.y, group = nHeadV / nHeadK;
	for (int which = 0; which < 2; which++) {
		const float* dxh = which == 0 ? dqh : dkh;
		long long off = t * width + (which == 0 ? kh : nHeadK + kh) * (long long)dimK;
		float scale = which == 0 ? rsqrtf((float)dimK) : 1.0f;
		float ss = 0.0f, dot = 0.0f;
		for (int i = threadIdx.x; i < dimK; i += blockDim.x) {
			float x = act_ld<AS>(qkv, act & 4, off + i), dy = 0.0f;
			for (int h = kh * group; h < (kh + 1) * group; h++) dy += dxh[(t * nHeadV + h) * dimK + i];
			ss += x * x;
			dot += x * dy;
		}
		ss = block_sum(ss, scratch);
		dot = block_sum(dot, scratch);
		float r = rsqrtf(ss + 1e-6f);
		for (int i = threadIdx.x; i < dimK; i += blockDim.x) {
			float x = act_ld<AS>(qkv, act & 4, off + i), dy = 0.0f;
			for (int h = kh * group; h < (kh + 1) * group; h++) dy += dxh[(t * nHeadV + h) * dimK + i];
			act_st<AS>(dqkv, act & 1, off + i, scale * (r * dy - x * r * r * r * dot));
		}
	}
}

GRPO_KERNEL void __launch_bounds__(128) gated_delta_l2_backward_f32(float* dqkv, const float* dqh, const float* dkh, const float* qkv, int nHeadK,
								    int nHeadV, int dimK, int dimV) {
	gated_delta_l2_backward<false>(dqkv, dqh, dkh, qkv, nHeadK, nHeadV, dimK, dimV, 0);
}
GRPO_KERNEL void __launch_bounds__(128) gated_delta_l2_backward_as(void* dqkv, const float* dqh, const float* dkh, const void* qkv, int nHeadK,
								   int nHeadV, int dimK, int dimV, int act) {
	gated_delta_l2_backward<true>(dqkv, dqh, dkh, qkv, nHeadK, nHeadV, dimK, dimV, act);
}
