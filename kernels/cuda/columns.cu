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
