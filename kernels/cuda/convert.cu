// convert.cu: bf16 ↔ f32. f32 → bf16 rounds to nearest even (NaN stays
// NaN), as cuda_bf16.h does; bf16 → f32 is exact.
// nvcc -ptx -arch=compute_90 convert.cu
#include "common.cuh"

GRPO_KERNEL void __launch_bounds__(256) f32_to_bf16(__nv_bfloat16* out, const float* in, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		out[i] = __float2bfloat16_rn(in[i]);
}

GRPO_KERNEL void __launch_bounds__(256) bf16_to_f32(float* out, const __nv_bfloat16* in, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		out[i] = __bfloat162float(in[i]);
}
