// advantages.cu: GroupAdvantages, adv = (r − mean(group)) / (std + 1e-4)
// per group of consecutive rewards, with the std of the group, of the
// whole batch, or no division.
//
// Everything is float64. That makes a constant group's advantage exactly
// 0, which the trainer relies on (no signal from a group that all
// succeeded or all failed): k equal float32 rewards sum exactly in
// float64 (k < 2²⁹), so mean = k·r/k = r and r − mean = 0, whatever the
// reduction order. The std is two-pass (mean first, then Σ (r − mean)²),
// unbiased (n − 1), and 0 for a single value, as torch.std.
//
// batch_std_f64 (one block) writes the batch std to a float64 scratch
// value when the scale is the batch's; group_advantages_f32 then runs one
// block per group.
// nvcc -ptx -arch=compute_90 advantages.cu
#include "common.cuh"

#define ADV_SCALE_GROUP 0
#define ADV_SCALE_BATCH 1
#define ADV_SCALE_NONE 2

// block_std returns the unbiased std of x[0..n) to every thread of the
// block, and the mean through *mean.
__device__ __forceinline__ double block_std(const float* x, int n, double* mean, double* scratch) {
	double s = 0.0;
	for (int i = threadIdx.x; i < n; i += blockDim.x) s += x[i];
	double mu = block_sum_f64(s, scratch) / n;
	double ss = 0.0;
	for (int i = threadIdx.x; i < n; i += blockDim.x) ss += (x[i] - mu) * (x[i] - mu);
	ss = block_sum_f64(ss, scratch);
	*mean = mu;
	return n < 2 ? 0.0 : sqrt(ss / (n - 1));
}

GRPO_KERNEL void __launch_bounds__(1024) batch_std_f64(double* out, const float* rewards, int n) {
	GRPO_SHARED(double, scratch, [32]);
	double mean;
	double sd = block_std(rewards, n, &mean, scratch);
	if (threadIdx.x == 0) out[0] = sd;
}

GRPO_KERNEL void __launch_bounds__(1024) group_advantages_f32(float* adv, const float* rewards, const double* batchStd, int nGroups,
				      int groupSize, int scale) {
	GRPO_SHARED(double, scratch, [32]);
	long long off = (long long)blockIdx.x * groupSize;
	const float* r = rewards + off;
	double mean;
	double sd = block_std(r, groupSize, &mean, scratch);
	double div = 1.0;
	if (scale == ADV_SCALE_GROUP) div = sd + 1e-4;
	if (scale == ADV_SCALE_BATCH) div = batchStd[0] + 1e-4;
	for (int i = threadIdx.x; i < groupSize; i += blockDim.x) adv[off + i] = (float)((r[i] - mean) / div);
}
