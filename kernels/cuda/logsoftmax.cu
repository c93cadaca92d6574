// logsoftmax.cu: LogSoftmaxGather — per row of logits, the log-probability
// of the target token and optionally the entropy, without materialising
// the softmax. grid (rows), block (1024, a multiple of 32); each thread
// strides over the vocabulary (vocab-chunked: thread i reads columns
// i, i+1024, …, so every pass is coalesced).
//
// Two passes: the row max, then Z' = Σ e^(x-max) and T = Σ e^(x-max)(x-max).
// log Z = max + log Z', logp = x[target] - log Z, and the entropy
// H = log Z' - T/Z' is formed from max-shifted terms, which avoids the
// cancellation of log Z - Σ p·x when the logits are large.
// nvcc -ptx -arch=compute_90 logsoftmax.cu
#include "common.cuh"

GRPO_KERNEL void __launch_bounds__(1024) log_softmax_gather_f32(float* logp, float* entropy, const float* logits, const int* target, int rows,
					int vocab) {
	GRPO_SHARED(float, scratch, [32]);
	long long r = blockIdx.x;
	const float* x = logits + r * vocab;
	float m = -INFINITY;
	for (int i = threadIdx.x; i < vocab; i += blockDim.x) m = fmaxf(m, x[i]);
	m = block_max(m, scratch);
	float z = 0.0f, tz = 0.0f;
	for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
		float d = x[i] - m;
		float e = expf(d);
		z += e;
		tz += e * d;
	}
	z = block_sum(z, scratch);
	if (entropy) tz = block_sum(tz, scratch);
	if (threadIdx.x == 0) {
		float logZ = logf(z);
		logp[r] = x[target[r]] - m - logZ;
		if (entropy) entropy[r] = logZ - tz / z;
	}
}
