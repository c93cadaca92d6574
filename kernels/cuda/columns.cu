// columns.cu: CopyColumns, which splits a fused projection's output (one
// GEMM over the q/k/v or gate/up weights concatenated at load) into its
// parts and joins their gradients. One block per row, threads striding over
// the columns, so reads and writes are coalesced.
// nvcc -ptx -arch=compute_90 columns.cu
#include "common.cuh"

// grid (rows), block (any): dst[r, dstOff + c] = src[r, srcOff + c], c < width.
GRPO_KERNEL void __launch_bounds__(256) copy_columns_f32(float* dst, const float* src, int width, int dstCols, int dstOff, int srcCols,
				  int srcOff) {
	long long r = blockIdx.x;
	float* d = dst + r * dstCols + dstOff;
	const float* s = src + r * srcCols + srcOff;
	for (int c = threadIdx.x; c < width; c += blockDim.x) d[c] = s[c];
}
// copy_columns_as is copy_columns_f32 with dst and src each f32 or bf16
// (bit 0 of bf16: dst, 1: src): bf16 to bf16 is exact, f32 to bf16 rounds
// once, bf16 to f32 widens.
GRPO_KERNEL void __launch_bounds__(256) copy_columns_as(void* dst, const void* src, int width, int dstCols, int dstOff, int srcCols,
				 int srcOff, int bf16) {
	long long r = blockIdx.x;
	long long d = r * dstCols + dstOff, s = r * srcCols + srcOff;
	for (int c = threadIdx.x; c < width; c += blockDim.x) st_as(dst, bf16 & 1, d + c, ld_as(src, bf16 & 2, s + c));
}
