// sumsquares.cu: SumSquares, Σ x[i]² in float64, rounded once — the
// gradient norm's building block. Deterministic: pass 1 gives each block a
// fixed grid-stride share and writes one float64 partial per block, pass 2
// (one block) adds the partials in a fixed tree order. The grid size
// depends only on n, so the same n always sums in the same order (no
// atomics).
// nvcc -ptx -arch=compute_90 sumsquares.cu
#include "common.cuh"

GRPO_KERNEL void __launch_bounds__(256) sum_squares_partial_f32(double* partial, const float* x, int n) {
	GRPO_SHARED(double, scratch, [32]);
	double s = 0.0;
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
	     i += (long long)gridDim.x * blockDim.x) {
		double v = x[i];
		s += v * v;
	}
	s = block_sum_f64(s, scratch);
	if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

GRPO_KERNEL void __launch_bounds__(1024) sum_squares_finish_f32(float* out, const double* partial, int nPartial) {
	GRPO_SHARED(double, scratch, [32]);
	double s = 0.0;
	for (int i = threadIdx.x; i < nPartial; i += blockDim.x) s += partial[i];
	s = block_sum_f64(s, scratch);
	if (threadIdx.x == 0) out[0] = (float)s;
}
