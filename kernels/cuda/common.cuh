// common.cuh: what every kernel source includes. Under nvcc it pulls in the
// CUDA headers; under the emulator (kernels/emu, GRPO_EMU defined by its
// shim.h, included first) the shim has already supplied them. It also holds
// the warp and block reductions the kernels share.
#pragma once

#ifndef GRPO_EMU
#include <cuda_bf16.h>
// Kernels have C linkage so the Go side finds them by name in the PTX.
#define GRPO_KERNEL extern "C" __global__
// One untyped dynamic shared array per kernel, viewed as T: declaring
// `extern __shared__ T name[]` with different T in one module is an error.
#define GRPO_DYNAMIC_SHARED(T, name)                            \
	extern __shared__ __align__(16) unsigned char grpo_smem_[]; \
	T* name = reinterpret_cast<T*>(grpo_smem_)
// Static shared memory: GRPO_SHARED(float, scratch, [32]) is
// `__shared__ float scratch[32]`. The emulator's shim fills it with a NaN
// pattern at the start of every block (a bare __shared__ does not compile
// there).
#define GRPO_SHARED(T, name, dims) __shared__ T name dims
// GRPO_COUNT_READ(bytes) marks a read of device memory that the emulator
// counts (emu's Device.ReadBytes, per kernel), so a test can bound the
// passes a kernel makes over its input; on a GPU it is nothing.
#define GRPO_COUNT_READ(bytes) ((void)0)
#else
#define GRPO_COUNT_READ(bytes) ::emu::count_read(bytes)
#endif

#define GRPO_FULL_MASK 0xffffffffu

// GRPO_SMEM_END rounds a kernel's dynamic shared bytes up to 16: nvcc
// merges loads of neighbouring ints into one 16-byte ld.shared.v4 where it
// knows the alignment, so the last control ints of a region are read as a
// whole 16 bytes (compute-sanitizer memcheck on an H100 found 4 bytes read
// past attention_flash_hd16_f32's end; TestFlashSharedAccessesInBounds).
#define GRPO_SMEM_END(n) (((n) + 15) / 16 * 16)

// warp_sum and warp_max reduce over the 32 lanes of a full warp; every
// lane gets the result.
__device__ __forceinline__ float warp_sum(float v) {
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(GRPO_FULL_MASK, v, o);
	return v;
}
__device__ __forceinline__ float warp_max(float v) {
	for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(GRPO_FULL_MASK, v, o));
	return v;
}

// block_sum and block_max reduce over a 1-D block whose size is a multiple
// of 32 (at most 1024); every thread gets the result. scratch is 32 floats
// of shared memory owned by the caller. The leading barrier makes a second
// call safe: nobody overwrites scratch while a slow warp still reads it.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
	int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
	v = warp_sum(v);
	__syncthreads();
	if (lane == 0) scratch[wid] = v;
	__syncthreads();
	v = lane < nw ? scratch[lane] : 0.0f;
	return warp_sum(v);
}
__device__ __forceinline__ float block_max(float v, float* scratch) {
	int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
	v = warp_max(v);
	__syncthreads();
	if (lane == 0) scratch[wid] = v;
	__syncthreads();
	v = lane < nw ? scratch[lane] : -INFINITY;
	return warp_max(v);
}

// warp_sum_f64 and block_sum_f64 are warp_sum and block_sum in float64,
// for sums that must not lose float32 bits (SumSquares, group means).
__device__ __forceinline__ double warp_sum_f64(double v) {
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(GRPO_FULL_MASK, v, o);
	return v;
}
__device__ __forceinline__ double block_sum_f64(double v, double* scratch) {
	int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
	v = warp_sum_f64(v);
	__syncthreads();
	if (lane == 0) scratch[wid] = v;
	__syncthreads();
	v = lane < nw ? scratch[lane] : 0.0;
	return warp_sum_f64(v);
}

// ld reads an element of a weight operand as f32: base weights may be f32
// or bf16, and kernels that take either are templates over the pointer
// type, instantiated once per dtype under an extern "C" name.
__device__ __forceinline__ float ld(const float* p, long long i) { return p[i]; }
__device__ __forceinline__ float ld(const __nv_bfloat16* p, long long i) { return __bfloat162float(p[i]); }
// ld_as and st_as read and write an activation that may be f32 or bf16,
// as a runtime flag says (ops whose operands each take either dtype):
// the read widens, the store rounds to nearest even once.
__device__ __forceinline__ float ld_as(const void* p, int bf16, long long i) {
	return bf16 ? __bfloat162float(((const __nv_bfloat16*)p)[i]) : ((const float*)p)[i];
}
__device__ __forceinline__ void st_as(void* p, int bf16, long long i, float v) {
	if (bf16)
		((__nv_bfloat16*)p)[i] = __float2bfloat16_rn(v);
	else
		((float*)p)[i] = v;
}
// ldc is ld with the read counted under emu (GRPO_COUNT_READ): the GEMM-like
// kernels read their operands through it, so a test can compare the bytes
// two kernels for one op request (L1/L2 hits included: an upper bound on
// what reaches HBM).
template <class T>
__device__ __forceinline__ float ldc(const T* p, long long i) {
	GRPO_COUNT_READ(sizeof(T));
	return ld(p, i);
}

// The paged KV cache (kernels.KVPages): position p of sequence s lives in
// cache row table[s·maxBlocks + p/blockSize]·blockSize + p % blockSize.
__device__ __forceinline__ long long kv_row(const int* table, int s, int p, int blockSize, int maxBlocks) {
	return (long long)table[(long long)s * maxBlocks + p / blockSize] * blockSize + p % blockSize;
}
