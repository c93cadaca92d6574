// gated_delta_step.cu: the gated delta rule for runs of one token — a
// decode step (kernels.LinearOps.GatedDeltaRule when every run is one
// token: the Go side launches it only then). One block per (run, value
// head); thread j owns column j of the head's state and makes two passes
// over it in global memory: the prediction k̂ᵀS, then the update and the
// output. Nothing is allocated and nothing waits for the host, so a
// decode step with it can be captured in a graph. Its CPU twin is the
// recurrence of kernels/cpu/linear_delta.go. gated_delta_step_as takes
// out and qkv each f32 or bf16 (act bits 0 and 1), read widened and stored
// rounded once.
// nvcc -ptx -arch=compute_90 gated_delta_step.cu
#include "linear.cuh"

// grid (nRuns, nHeadV), block (128), dynamic shared 2·dimK floats (q̂, k̂).
template <bool AS>
__device__ __forceinline__ void gated_delta_step(void* out, const void* qkv, const float* g, const float* beta, float* state, const int* runs,
						 int nTok, int slots, int nHeadK, int nHeadV, int dimK, int dimV, int act) {
	GRPO_DYNAMIC_SHARED(float, sh);
	DeltaDims d = {nHeadK, nHeadV, dimK, dimV};
	int h = blockIdx.y;
	LinearRun r;
	if (!linear_run(runs, blockIdx.x, nTok, slots, &r)) return;
	float *q = sh, *k = sh + dimK;
	long long t = r.first;
	delta_load_rows<AS>(q, qkv, act & 2, d.width(), r.first, 1, d.qOff(h), dimK, rsqrtf((float)dimK));
	delta_load_rows<AS>(k, qkv, act & 2, d.width(), r.first, 1, d.kOff(h), dimK, 1.0f);
	__syncthreads();
	float a = expf(g[t * nHeadV + h]), b = beta[t * nHeadV + h];
	long long v = t * d.width() + d.vOff(h);
	const float* S0 = r.init >= 0 ? state + ((long long)r.init * nHeadV + h) * d.headState() : nullptr;
	float* S1 = r.fin >= 0 ? state + ((long long)r.fin * nHeadV + h) * d.headState() : nullptr;
	for (int j = threadIdx.x; j < dimV; j += blockDim.x) {
		float pred = 0.0f;
		if (S0)
			for (int i = 0; i < dimK; i++) pred += k[i] * S0[(long long)i * dimV + j];
		float delta = b * (act_ld<AS>(qkv, act & 2, v + j) - a * pred), o = 0.0f;
		// Element (i, j) is read and then written by this thread alone,
		// so the init slot may be the final one.
		for (int i = 0; i < dimK; i++) {
			float s = (S0 ? a * S0[(long long)i * dimV + j] : 0.0f) + k[i] * delta;
			o += q[i] * s;
			if (S1) S1[(long long)i * dimV + j] = s;
		}
		act_st<AS>(out, act & 1, (t * nHeadV + h) * dimV + j, o);
	}
}

GRPO_KERNEL void __launch_bounds__(128) gated_delta_step_f32(float* out, const float* qkv, const float* g, const float* beta, float* state,
							     const int* runs, int nTok, int slots, int nHeadK, int nHeadV, int dimK, int dimV) {
	gated_delta_step<false>(out, qkv, g, beta, state, runs, nTok, slots, nHeadK, nHeadV, dimK, dimV, 0);
}
GRPO_KERNEL void __launch_bounds__(128) gated_delta_step_as(void* out, const void* qkv, const float* g, const float* beta, float* state,
							    const int* runs, int nTok, int slots, int nHeadK, int nHeadV, int dimK, int dimV, int act) {
	gated_delta_step<true>(out, qkv, g, beta, state, runs, nTok, slots, nHeadK, nHeadV, dimK, dimV, act);
}
