// sampling.cu: kernels.Backend's Sample (its doc comment in
// kernels/sample.go is the spec): one token per row of logits with the CPU
// backend's semantics (kernels/cpu/sample.go): temperature T (0 = argmax,
// ties to the lowest id), then min-p, top-k and top-p, ties broken by
// lower id; the row's uniform draw u comes from the host, so the host keeps
// the random streams and a row's token does not depend on the backend. It
// returns the token and its log-prob under the raw distribution (T = 1,
// untruncated), which is what GRPO's importance ratio needs. A row holding
// NaN or +Inf, or no finite logit, gets token −1 and log-prob NaN: the
// sampler's error flag, so the host need not scan the logits.
//
// Per-row parameters: params holds five doubles per row, {u, T, top_p,
// min_p, top_k}, staged by the Go side (kernels/cuda/sample.go) from the
// host's float64 values, so rows of one batch may be sampled differently
// and nothing is rounded to float32 on the way.
//
// Launch: grid (rows), block min(1024, vocab↑32), no dynamic shared
// memory. Nothing is stored per token: every candidate set is a top set in
// the order (logit desc, id asc), so it is described by a threshold key
// plus how many of the tokens tied at the threshold it takes, lowest ids
// first. Thresholds are found by a 32-step bitwise search over the
// order-preserving uint32 key of the logit, each step one pass over the
// row (a count or a float64 mass, block-reduced in a fixed order:
// deterministic). Sampling without truncation walks the row in id order
// (as the CPU backend does when nothing is cut), with truncation in sorted
// order. Weights and masses are float64, as on the CPU. Cost: up to ~100
// passes over the row — fine for decode (one block per sequence, the row
// stays in L2), the next step is to stage the top-k candidates in shared
// memory.
// nvcc -ptx -arch=compute_90 sampling.cu
#include "common.cuh"

// okey maps a float to a uint32 whose unsigned order is the float order.
__device__ __forceinline__ unsigned okey(float x) {
	unsigned u = __float_as_uint(x);
	return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ float from_okey(unsigned k) {
	return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

struct SampleRow {
	const float* x;
	int vocab;
	double m, invT, floor;  // row max, 1/T, log(min_p) (−Inf when off)
	double* scratch;        // 32 doubles of shared memory
	__device__ bool cand(float v) const {
		double s = ((double)v - m) * invT;
		return s >= floor && s > -INFINITY;
	}
	__device__ double weight(float v) const { return exp(((double)v - m) * invT); }
	// count and mass of candidates with key ≥ t (every thread gets them).
	__device__ double count_ge(unsigned t) const {
		double c = 0.0;
		for (int i = threadIdx.x; i < vocab; i += blockDim.x) c += (cand(x[i]) && okey(x[i]) >= t) ? 1.0 : 0.0;
		return block_sum_f64(c, scratch);
	}
	__device__ double mass_ge(unsigned t) const {
		double s = 0.0;
		for (int i = threadIdx.x; i < vocab; i += blockDim.x)
			if (cand(x[i]) && okey(x[i]) >= t) s += weight(x[i]);
		return block_sum_f64(s, scratch);
	}
	__device__ double count_gt(unsigned t) const { return t == 0xffffffffu ? 0.0 : count_ge(t + 1); }
	__device__ double mass_gt(unsigned t) const { return t == 0xffffffffu ? 0.0 : mass_ge(t + 1); }
};

// block_scan_f64 is an inclusive prefix sum over the block in thread
// order; *total gets the block's sum. wsum is 32 doubles of shared memory.
__device__ __forceinline__ double block_scan_f64(double v, double* wsum, double* total) {
	int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
	for (int o = 1; o < 32; o <<= 1) {
		double n = __shfl_up_sync(GRPO_FULL_MASK, v, o);
		if (lane >= o) v += n;
	}
	__syncthreads();  // wsum may still be read by a previous call
	if (lane == 31) wsum[wid] = v;
	__syncthreads();
	if (wid == 0) {
		double s = lane < nw ? wsum[lane] : 0.0;
		for (int o = 1; o < 32; o <<= 1) {
			double n = __shfl_up_sync(GRPO_FULL_MASK, s, o);
			if (lane >= o) s += n;
		}
		if (lane < nw) wsum[lane] = s;
	}
	__syncthreads();
	*total = wsum[nw - 1];
	return v + (wid > 0 ? wsum[wid - 1] : 0.0);
}

// first_crossing returns the lowest id i such that Σ_{j ≤ i} f(j) > target,
// walking the row in id order in chunks of blockDim; -1 if none. f(j) is
// the weight of a candidate (mode 0) or 1 for a token whose key is tie
// (mode 1).
__device__ int first_crossing(const SampleRow& R, int mode, unsigned tie, double target, double* wsum, int* found) {
	double base = 0.0;
	for (int c0 = 0; c0 < R.vocab; c0 += blockDim.x) {
		int i = c0 + threadIdx.x;
		double f = 0.0;
		if (i < R.vocab) {
			float v = R.x[i];
			if (mode == 0) f = R.cand(v) ? R.weight(v) : 0.0;
			else f = (R.cand(v) && okey(v) == tie) ? 1.0 : 0.0;
		}
		if (threadIdx.x == 0) *found = -1;
		double total;
		double incl = block_scan_f64(f, wsum, &total);  // its barriers publish *found = -1
		if (f > 0.0 && base + incl > target && base + incl - f <= target) *found = i;
		__syncthreads();
		int got = *found;
		__syncthreads();  // everyone has read *found before it is reset
		if (got >= 0) return got;
		base += total;
	}
	return -1;
}

// search returns the largest key t with f(t) ≥ need (f non-increasing in t)
// when strict is 0, or with f(t) > need when strict is 1.
#define SAMPLE_SEARCH(result, need, strict, F)                                 \
	do {                                                                   \
		unsigned th_ = 0;                                              \
		for (int b_ = 31; b_ >= 0; b_--) {                             \
			unsigned t = th_ | (1u << b_);                         \
			double f_ = (F);                                       \
			if ((strict) ? f_ > (need) : f_ >= (need)) th_ = t;    \
		}                                                              \
		result = th_;                                                  \
	} while (0)

GRPO_KERNEL void __launch_bounds__(1024) sample_f32(int* token, float* logprob, const float* logits, const double* params, int rows,
			    int vocab) {
	GRPO_SHARED(double, scratch, [32]);
	GRPO_SHARED(double, wsum, [32]);
	GRPO_SHARED(float, fscratch, [32]);
	GRPO_SHARED(int, found, );
	long long r = blockIdx.x;
	const float* x = logits + r * vocab;
	const double* pr = params + 5 * r;
	double uu = pr[0], temperature = pr[1], topP = pr[2], minP = pr[3];
	int topK = (int)pr[4];

	// Row max, then the error flag: NaN or +Inf anywhere, or no finite
	// logit (fmaxf skips NaN, so the flag is its own reduction).
	float mx = -INFINITY, bad = 0.0f;
	for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
		float v = x[i];
		mx = fmaxf(mx, v);
		if (v != v || v == INFINITY) bad = 1.0f;
	}
	mx = block_max(mx, fscratch);
	bad = block_max(bad, fscratch);
	if (bad > 0.0f || mx == -INFINITY) {  // the whole block agrees: no barrier below is skipped by some
		if (threadIdx.x == 0) {
			token[r] = -1;
			logprob[r] = __int_as_float(0x7fc00000);  // NaN
		}
		return;
	}
	// The raw normaliser and the argmax: the lowest id holding the max,
	// as a float block-min (ids < 2²⁴ are exact in float).
	double m = mx;
	double z1 = 0.0;
	float firstMax = (float)vocab;
	for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
		z1 += exp((double)x[i] - m);
		if (x[i] == mx) firstMax = fminf(firstMax, (float)i);
	}
	z1 = block_sum_f64(z1, scratch);
	int argmax = (int)-block_max(-firstMax, fscratch);
	SampleRow R{x, vocab, m, temperature > 0.0 ? 1.0 / temperature : 0.0, minP > 0.0 ? log(minP) : -INFINITY,
		    scratch};

	int tok = argmax;
	double nCand = temperature > 0.0 ? R.count_ge(0) : 0.0;
	if (nCand > 0.0) {
		double k = (topK > 0 && topK < nCand) ? topK : nCand;
		if (k == nCand && topP >= 1.0) {
			// Nothing cut: inverse CDF in id order, as on the CPU.
			double z = R.mass_ge(0);
			int t = first_crossing(R, 0, 0, uu * z, wsum, &found);
			if (t < 0) {  // rounding put the target at the very end: the last candidate
				float last = -1.0f;
				for (int i = threadIdx.x; i < vocab; i += blockDim.x)
					if (R.cand(x[i])) last = fmaxf(last, (float)i);
				t = (int)block_max(last, fscratch);
			}
			tok = t;
		} else {
			// Top-k: θk is the k-th largest key; r ties at θk are kept.
			unsigned thK;
			SAMPLE_SEARCH(thK, k, 0, R.count_ge(t));
			double wK = R.weight(from_okey(thK));
			double rK = k - R.count_gt(thK);
			double zK = R.mass_gt(thK) + rK * wK;
			// Top-p: the smallest sorted prefix with mass ≥ topP·zK.
			unsigned thP = thK;
			double q = rK, zKept = zK;
			if (topP < 1.0) {
				double need = topP * zK;
				SAMPLE_SEARCH(thP, need, 0, t > thK ? R.mass_ge(t) : zK);
				double wP = R.weight(from_okey(thP));
				double above = R.mass_gt(thP);
				double avail = thP == thK ? rK : R.count_ge(thP) - R.count_gt(thP);
				q = fmin(fmax(ceil((need - above) / wP), 1.0), avail);
				zKept = above + q * wP;
			}
			// Inverse CDF in sorted order: the level θs where the
			// cumulative mass passes the target, then the tie index.
			double target = uu * zKept;
			unsigned thS;
			SAMPLE_SEARCH(thS, target, 1, t > thP ? R.mass_ge(t) : zKept);
			double wS = R.weight(from_okey(thS));
			double aboveS = R.mass_gt(thS);
			double tiesS = thS == thP ? q : R.count_ge(thS) - R.count_gt(thS);
			double j = fmin(fmax(floor((target - aboveS) / wS), 0.0), tiesS - 1.0);
			tok = first_crossing(R, 1, thS, j, wsum, &found);
			if (tok < 0) tok = argmax;  // unreachable: j < the ties at θs
		}
	}
	if (threadIdx.x == 0) {
		token[r] = tok;
		logprob[r] = (float)((double)x[tok] - m - log(z1));
	}
}
