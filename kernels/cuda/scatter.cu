// scatter.cu: ScatterRows, GatherRows' backward (the training head's row
// gradients back into the residual stream). One block per row moved,
// threads striding over the columns, as gather_rows does; the indices are
// distinct, so no two blocks write one row.
// nvcc -ptx -arch=compute_90 scatter.cu
#include "common.cuh"

// grid (n), block (any): out[idx[i], :] = src[i, :].
GRPO_KERNEL void __launch_bounds__(256) scatter_rows_f32(float* out, const float* src, const int* idx, int n, int cols) {
	int i = blockIdx.x;
	float* dst = out + (long long)idx[i] * cols;
	for (int c = threadIdx.x; c < cols; c += blockDim.x) dst[c] = src[(long long)i * cols + c];
}
