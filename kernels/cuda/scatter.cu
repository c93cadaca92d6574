// scatter.cu: ScatterRows, GatherRows' backward (the training head's row
// gradients back into the residual stream). One block per row moved,
// threads striding over the columns, as gather_rows does; the indices are
// distinct, so no two blocks write one row.
// nvcc -ptx -arch=compute_90 scatter.cu
#include "common.cuh"

// grid (n), block (any): out[idx[i], :] = src[i, :], element for element
// of T (f32, or bf16's 16 bits moved as they are).
template <typename T>
__device__ __forceinline__ void scatter_rows(T* out, const T* src, const int* idx, int cols) {
	int i = blockIdx.x;
	T* dst = out + (long long)idx[i] * cols;
	for (int c = threadIdx.x; c < cols; c += blockDim.x) dst[c] = src[(long long)i * cols + c];
}
GRPO_KERNEL void __launch_bounds__(256) scatter_rows_f32(float* out, const float* src, const int* idx, int n, int cols) {
	scatter_rows(out, src, idx, cols);
}
// A bf16 layer's rows under expert parallelism: the experts' output and
// input gradient, in the order the exchange sends them.
GRPO_KERNEL void __launch_bounds__(256) scatter_rows_bf16(unsigned short* out, const unsigned short* src, const int* idx, int n, int cols) {
	scatter_rows(out, src, idx, cols);
}
