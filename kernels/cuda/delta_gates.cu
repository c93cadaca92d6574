// delta_gates.cu: a DeltaNet layer's per-head decay and write strength
// and their backward (kernels.LinearOps.DeltaGates), grid-stride over
// rows × heads. CPU twin: kernels/cpu/linear_gates.go.
// nvcc -ptx -arch=compute_90 delta_gates.cu
#include "linear.cuh"

// softplus as torch's: linear above 20.
__device__ __forceinline__ float softplusf_(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

template <class W>
__device__ __forceinline__ void delta_gates(float* g, float* beta, const float* a, const float* b, const W* aLog, const W* dtBias, int n,
					    int heads) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		int h = (int)(i % heads);
		g[i] = -expf(ld(aLog, h)) * softplusf_(a[i] + ld(dtBias, h));
		beta[i] = sigmoidf_(b[i]);
	}
}

GRPO_KERNEL void __launch_bounds__(256) delta_gates_f32(float* g, float* beta, const float* a, const float* b, const float* aLog, const float* dtBias,
							int n, int heads) {
	delta_gates(g, beta, a, b, aLog, dtBias, n, heads);
}
GRPO_KERNEL void __launch_bounds__(256) delta_gates_wbf16(float* g, float* beta, const float* a, const float* b, const __nv_bfloat16* aLog,
							  const __nv_bfloat16* dtBias, int n, int heads) {
	delta_gates(g, beta, a, b, aLog, dtBias, n, heads);
}

template <class W>
__device__ __forceinline__ void delta_gates_backward(float* da, float* db, const float* dg, const float* dbeta, const float* a, const float* b,
						     const W* aLog, const W* dtBias, int n, int heads) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		int h = (int)(i % heads);
		float x = a[i] + ld(dtBias, h);
		float sp = x > 20.0f ? 1.0f : sigmoidf_(x); // softplus'
		da[i] = -dg[i] * expf(ld(aLog, h)) * sp;
		float s = sigmoidf_(b[i]);
		db[i] = dbeta[i] * s * (1.0f - s);
	}
}

GRPO_KERNEL void __launch_bounds__(256) delta_gates_backward_f32(float* da, float* db, const float* dg, const float* dbeta, const float* a,
								 const float* b, const float* aLog, const float* dtBias, int n, int heads) {
	delta_gates_backward(da, db, dg, dbeta, a, b, aLog, dtBias, n, heads);
}
GRPO_KERNEL void __launch_bounds__(256) delta_gates_backward_wbf16(float* da, float* db, const float* dg, const float* dbeta, const float* a,
								   const float* b, const __nv_bfloat16* aLog, const __nv_bfloat16* dtBias, int n,
								   int heads) {
	delta_gates_backward(da, db, dg, dbeta, a, b, aLog, dtBias, n, heads);
}
