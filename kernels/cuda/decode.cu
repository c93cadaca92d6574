// decode.cu: the two small ops that keep a decode step on the device
// (kernels.Backend's AddI32 and the draw half of SampleStream; their doc
// comments are the spec): positions advanced by a kernel instead of
// uploaded, and each sequence's uniform draw made from its own random
// stream in device memory instead of sent by the host.
// nvcc -ptx -arch=compute_90 decode.cu
#include "common.cuh"

// add_i32: out = a + b over n int32 values (two's-complement wrap, as Go's
// int32 addition). Grid-stride.
GRPO_KERNEL void __launch_bounds__(256) add_i32(int* out, const int* a, const int* b, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		out[i] = (int)((unsigned)a[i] + (unsigned)b[i]);
}

// pcg_mulhi is the high word of the 128-bit product x·y, from 32-bit halves
// so the same code runs on the GPU and under the emulator.
__device__ __forceinline__ unsigned long long pcg_mulhi(unsigned long long x, unsigned long long y) {
	unsigned long long x0 = x & 0xffffffffull, x1 = x >> 32, y0 = y & 0xffffffffull, y1 = y >> 32;
	unsigned long long p00 = x0 * y0, p01 = x0 * y1, p10 = x1 * y0, p11 = x1 * y1;
	unsigned long long mid = (p00 >> 32) + (p01 & 0xffffffffull) + (p10 & 0xffffffffull);
	return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

// pcg_draw_f64: for each of rows rows whose temperature params[5r+1] is
// positive, advance the row's PCG-DXSM state (state[2r] = hi, state[2r+1]
// = lo: Go's math/rand/v2 PCG) by one step and write its Float64 —
// (Uint64 << 11 >> 11) / 2^53 — to params[5r], the u that sample_f32
// reads. Rows at temperature 0 draw nothing, as the host sampler does.
// One thread per row; launch grid ⌈rows/256⌉, block 256.
GRPO_KERNEL void __launch_bounds__(256) pcg_draw_f64(double* params, unsigned long long* state, int rows) {
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= rows || !(params[5 * r + 1] > 0.0)) return;
	const unsigned long long mulHi = 2549297995355413924ull, mulLo = 4865540595714422341ull;
	const unsigned long long incHi = 6364136223846793005ull, incLo = 1442695040888963407ull;
	unsigned long long hi = state[2 * r], lo = state[2 * r + 1];
	// state = state · mul + inc, mod 2^128
	unsigned long long nhi = pcg_mulhi(lo, mulLo) + hi * mulLo + lo * mulHi;
	unsigned long long nlo = lo * mulLo;
	unsigned long long sum = nlo + incLo;
	nhi += incHi + (sum < nlo ? 1ull : 0ull);
	nlo = sum;
	state[2 * r] = nhi;
	state[2 * r + 1] = nlo;
	// DXSM output
	unsigned long long x = nhi;
	x ^= x >> 32;
	x *= 0xda942042e4dd58b5ull;
	x ^= x >> 48;
	x *= (nlo | 1ull);
	params[5 * r] = (double)((x << 11) >> 11) / 9007199254740992.0;
}
