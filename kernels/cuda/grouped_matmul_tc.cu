// grouped_matmul_tc.cu: kernels.MoEOps' GroupedMatMul with bf16 expert
// weights on tensor cores (tensor_core.cuh): C[r, :] = alpha·A[r, :]·B_eᵀ
// (+ beta·C) for each row r in expert e's range [offsets[e],
// offsets[e+1]), B_e stored n × k (transB, the forward's gate/up and down
// projections) or k × n (the backward's dy·W). A (the grouped
// activations) is f32, rounded to bf16 as it is staged, or bf16, staged
// as it is; B is read exactly. C is f32 or bf16: a bf16 C is read widened
// for beta and stored rounded to nearest even once (the _abf16, _cbf16,
// _abf16_cbf16 kernels: a bf16 A, C, or both).
// Expert row ranges are ragged: a tile's rows past its expert's end, and
// columns past n or k past its end, are staged as zeros and not written,
// so any n and k take this kernel — the hub models' expert sizes (GLM-4.5
// 1408 by default, Qwen3-MoE 768 and 1536, Qwen3.5 512, hidden sizes 2048
// to 5120) happen to be multiples of 64, the tiny test models' (32, 48)
// are not. f32 expert weights (and
// LoRA's expert products, f32 operands) keep moe.cu's grouped_matmul_f32.
//
// grouped_matmul_tc_mxfp4 is the same GEMM with B in MXFP4
// (kernels.MXFP4: e2m1 codes two a byte, low nibble first, an E8M0 scale
// byte per 32 consecutive elements): each element of B is decoded as its
// tile is staged into shared memory, code·2^(scale−127), exact in bf16, so
// the result equals grouped_matmul_tc_bf16's over the dequantized weights
// bit for bit and the weights stay 4.25 bits an element on the device.
// The same element index serves both layouts (B_e's element (row, col) of
// its stored rows), so the backward's dy·W reads the transposed MXFP4
// weights with no copy.
// nvcc -ptx -arch=compute_90 grouped_matmul_tc.cu
#include "common.cuh"
#include "tensor_core.cuh"

// e2m1_value is the value of an MXFP4 code (sign bit 3; 0, 0.5, 1, 1.5,
// 2, 3, 4, 6).
__device__ __forceinline__ float e2m1_value(unsigned int code) {
	unsigned int c = code & 7;  // 0–3: c/2; 4–7: 2^(1 + (c−4)/2)·(1 + (c&1)/2)
	float m = c < 4 ? 0.5f * (float)c : (float)(2 << ((c - 4) >> 1)) * (1.0f + 0.5f * (float)(c & 1));
	return code & 8 ? -m : m;
}

// mxfp4_at is element i of an MXFP4 stack.
__device__ __forceinline__ float mxfp4_at(const unsigned char* codes, const unsigned char* scales, long long i) {
	GRPO_COUNT_READ(2);  // its code's byte and its block's scale
	unsigned int byte = codes[i >> 1];
	return ldexpf(e2m1_value(i & 1 ? byte >> 4 : byte & 15), (int)scales[i >> 5] - 127);
}

// grouped_tc computes the block's tile: grid (⌈rows/TC_TM⌉ + nExperts,
// ⌈n/TC_TN⌉), block TC_THREADS: row tile x of the flattened per-expert
// tile list (the same list as moe.cu's grouped_matmul); blocks past its
// end return. wb(e, i) is element i of expert e's matrix as stored.
template <class A, class C, class WB>
__device__ __forceinline__ void grouped_tc(TcSmem& s, int* tile, C* c, const A* a, const WB& wb, const int* offsets, int nExperts, int n, int k,
					   int transB, float alpha, float beta) {
	if (threadIdx.x == 0) {
		int t = blockIdx.x, found = -1, r0 = 0;
		for (int e = 0; e < nExperts; e++) {
			int tiles = (offsets[e + 1] - offsets[e] + TC_TM - 1) / TC_TM;
			if (t < tiles) {
				found = e;
				r0 = offsets[e] + t * TC_TM;
				break;
			}
			t -= tiles;
		}
		tile[0] = found;
		tile[1] = r0;
	}
	__syncthreads();
	int e = tile[0];
	if (e < 0) return;  // the whole block: e is shared
	int r0 = tile[1], rEnd = offsets[e + 1], c0 = blockIdx.y * TC_TN;
	auto la = [&](int r, int kk) { return r0 + r < rEnd ? ldc(a, (long long)(r0 + r) * k + kk) : 0.0f; };
	if (transB)
		tc_tile<true, true>(s, k, la, [&](int kk, int cc) { return c0 + cc < n ? wb(e, (long long)(c0 + cc) * k + kk) : 0.0f; });
	else
		tc_tile<true, false>(s, k, la, [&](int kk, int cc) { return c0 + cc < n ? wb(e, (long long)kk * n + c0 + cc) : 0.0f; });
	for (int i = threadIdx.x; i < TC_TM * TC_TN; i += blockDim.x) {
		int r = r0 + i / TC_TN, col = c0 + i % TC_TN;
		if (r >= rEnd || col >= n) continue;
		C* cp = c + (long long)r * n + col;
		float v = alpha * s.c[(i / TC_TN) * TC_LDC + i % TC_TN];
		if (beta != 0.0f) v += beta * ldc(cp, 0);
		st_as(cp, sizeof(C) == 2, 0, v);
	}
}

// One kernel per dtype of A and C (f32 unless the suffix names them bf16).
#define GROUPED_MATMUL_TC(suffix, A, C) \
	GRPO_KERNEL void __launch_bounds__(TC_THREADS) grouped_matmul_tc_bf16##suffix(C* c, const A* a, const __nv_bfloat16* b, const int* offsets, \
										int nExperts, int n, int k, int transB, float alpha, float beta) { \
		GRPO_SHARED(TcSmem, s, ); \
		GRPO_SHARED(int, tile, [2]); \
		long long per = (long long)k * n; \
		grouped_tc(s, tile, c, a, [&](int e, long long i) { return ldc(b, e * per + i); }, offsets, nExperts, n, k, transB, alpha, beta); \
	} \
	GRPO_KERNEL void __launch_bounds__(TC_THREADS) grouped_matmul_tc_mxfp4##suffix(C* c, const A* a, const unsigned char* codes, \
										 const unsigned char* scales, const int* offsets, int nExperts, int n, \
										 int k, int transB, float alpha, float beta) { \
		GRPO_SHARED(TcSmem, s, ); \
		GRPO_SHARED(int, tile, [2]); \
		long long per = (long long)k * n; \
		grouped_tc(s, tile, c, a, [&](int e, long long i) { return mxfp4_at(codes, scales, e * per + i); }, offsets, nExperts, n, k, transB, \
			   alpha, beta); \
	}
GROUPED_MATMUL_TC(, float, float)
GROUPED_MATMUL_TC(_abf16, __nv_bfloat16, float)
GROUPED_MATMUL_TC(_cbf16, float, __nv_bfloat16)
GROUPED_MATMUL_TC(_abf16_cbf16, __nv_bfloat16, __nv_bfloat16)
