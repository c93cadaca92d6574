// rope.cu: rotary position embedding, rotate-half convention (HF
// Llama/Qwen), in place. One thread per rotated pair, grid-stride.
// The angle is the f32 product pos·invFreq (as HF computes it in f32);
// sincosf does full range reduction (no --use_fast_math), so positions up
// to 32k keep full precision.
// nvcc -ptx -arch=compute_90 rope.cu
#include "common.cuh"

GRPO_KERNEL void __launch_bounds__(256) rope_f32(float* x, const int* pos, const float* invFreq, int nTok, int nHead, int headDim,
			  int inverse) {
	int half = headDim / 2;
	long long pairs = (long long)nTok * nHead * half;
	for (long long p = blockIdx.x * (long long)blockDim.x + threadIdx.x; p < pairs;
	     p += (long long)gridDim.x * blockDim.x) {
		int i = (int)(p % half);
		long long th = p / half;  // t·nHead + h
		int t = (int)(th / nHead);
		float ang = (float)pos[t] * invFreq[i];
		float s, c;
		sincosf(ang, &s, &c);
		if (inverse) s = -s;
		float* row = x + th * headDim;
		float x1 = row[i], x2 = row[i + half];
		row[i] = x1 * c - x2 * s;
		row[i + half] = x2 * c + x1 * s;
	}
}
