// relu2.cu: ReLU2 and its backward, Nemotron-H's squared ReLU. One thread
// per element with a grid-stride loop; each reads its element before
// writing it, so the outputs may alias the inputs.
// nvcc -ptx -arch=compute_90 relu2.cu
#include "common.cuh"

GRPO_KERNEL void __launch_bounds__(256) relu2_f32(float* out, const float* x, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		float r = fmaxf(x[i], 0.0f);
		out[i] = r * r;
	}
}

// dx = 2·max(x, 0)·dy: the products in double, rounded once, as the CPU
// twin computes them.
GRPO_KERNEL void __launch_bounds__(256) relu2_backward_f32(float* dx, const float* dy, const float* x, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		double r = fmax((double)x[i], 0.0);
		dx[i] = (float)(2.0 * r * (double)dy[i]);
	}
}

// relu2_as and relu2_backward_as are the kernels above with each operand
// f32 or bf16 (bits of bf16 in argument order: out, x; dx, dy, x), read
// widened, the same arithmetic, stored rounded once.
GRPO_KERNEL void __launch_bounds__(256) relu2_as(void* out, const void* x, int n, int bf16) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		float r = fmaxf(ld_as(x, bf16 & 2, i), 0.0f);
		st_as(out, bf16 & 1, i, r * r);
	}
}
GRPO_KERNEL void __launch_bounds__(256) relu2_backward_as(void* dx, const void* dy, const void* x, int n, int bf16) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		double r = fmax((double)ld_as(x, bf16 & 4, i), 0.0);
		st_as(dx, bf16 & 1, i, (float)(2.0 * r * (double)ld_as(dy, bf16 & 2, i)));
	}
}
