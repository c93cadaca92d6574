// linear.cuh: what the DeltaNet kernels (kernels.LinearOps) share: reading
// a run, and the activations their CPU twins compute in float64.
#pragma once
#include "common.cuh"

// LinearRun is run r of a runs operand (kernels.LinearOps): first token,
// count, init and final slot.
struct LinearRun {
	int first, count, init, fin;
};

// linear_run reads run r and reports whether it is well formed for nTok
// tokens and slots state slots; a malformed run is skipped (the CPU
// backend panics on it; the device cannot).
__device__ __forceinline__ bool linear_run(const int* runs, int r, int nTok, int slots, LinearRun* out) {
	const int* p = runs + 4LL * r;
	LinearRun x = {p[0], p[1], p[2], p[3]};
	*out = x;
	return x.first >= 0 && x.count >= 1 && x.first + x.count <= nTok && x.init >= -1 && x.init < slots && x.fin >= -1 &&
	       x.fin < slots;
}

__device__ __forceinline__ float sigmoidf_(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ float siluf_(float x) { return x * sigmoidf_(x); }
// silu'(x) = σ(x)·(1 + x·(1 − σ(x))).
__device__ __forceinline__ float silu_gradf_(float x) {
	float s = sigmoidf_(x);
	return s * (1.0f + x * (1.0f - s));
}

// act_ld and act_st read and write an activation of a kernel instantiated
// with AS (an _as kernel: the activation is f32 or bf16 as the flag bf16
// says, read widened, stored rounded once) or without it (f32 only: plain
// float accesses, so the f32 kernels compile as they did before).
template <bool AS>
__device__ __forceinline__ float act_ld(const void* p, int bf16, long long i) {
	return AS ? ld_as(p, bf16, i) : ((const float*)p)[i];
}
template <bool AS>
__device__ __forceinline__ void act_st(void* p, int bf16, long long i, float v) {
	if (AS)
		st_as(p, bf16, i, v);
	else
		((float*)p)[i] = v;
}

// delta_load_rows writes the l2-normalised rows of L tokens into dst (L ×
// dimK): row t is qkv's row first+t from column off (bf16 when qbf is set
// under AS), times scale/sqrt(Σx² + 1e-6), the sum over the widened
// values in f32. One warp per row; no barrier.
template <bool AS>
__device__ __forceinline__ void delta_load_rows(float* dst, const void* qkv, int qbf, long long width, int first, int L, int off, int dimK,
						float scale) {
	int lane = threadIdx.x & 31, nw = blockDim.x >> 5;
	for (int t = threadIdx.x >> 5; t < L; t += nw) {
		long long src = (first + t) * width + off;
		float ss = 0.0f;
		for (int i = lane; i < dimK; i += 32) {
			float v = act_ld<AS>(qkv, qbf, src + i);
			dst[t * dimK + i] = v;
			ss += v * v;
		}
		float r = rsqrtf(warp_sum(ss) + 1e-6f) * scale;
		for (int i = lane; i < dimK; i += 32) dst[t * dimK + i] *= r;
	}
}

// DeltaDims are a GatedDeltaRule call's sizes; head h reads key head
// h / (nHeadV / nHeadK), and a qkv row is q | k | v.
struct DeltaDims {
	int nHeadK, nHeadV, dimK, dimV;
	__device__ long long width() const { return 2LL * nHeadK * dimK + (long long)nHeadV * dimV; }
	__device__ int keyHead(int h) const { return h / (nHeadV / nHeadK); }
	__device__ int qOff(int h) const { return keyHead(h) * dimK; }
	__device__ int kOff(int h) const { return (nHeadK + keyHead(h)) * dimK; }
	__device__ long long vOff(int h) const { return 2LL * nHeadK * dimK + (long long)h * dimV; }
	__device__ long long headState() const { return (long long)dimK * dimV; }
};
