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
// memory (36 KB static). Every candidate set is a top set in the order
// (logit desc, id asc). A row costs three reads: (1) its max and the
// error flag; (2) the raw normaliser, the argmax, the candidates' count
// and float64 mass, and a histogram of the candidates over SAMPLE_BINS
// bins of the processed logit s = (x − max)/T (bin width 1/32 over
// (−32, 0], the rest in the last bin); (3) the candidates of the bins
// that can hold the cut — the bins through the k-th candidate under
// top-k, through the first bin whose lower mass bound reaches top_p of
// the total under top-p alone — staged in shared memory (≤ SAMPLE_STAGE),
// sorted there (bitonic, by key desc, id asc), and cut and drawn from by
// one thread in sorted order with sequential float64 sums, exactly as the
// CPU backend sums. When the staged set would not fit (a flat row, a
// top-k of thousands, top-p whose mass lies beyond e⁻³²), the row falls
// back to thresholds found by a 32-step bitwise search over the
// order-preserving uint32 key, each step a pass over the row (up to ~100
// passes; the kernel before the staging always took this path). Sampling
// without truncation walks the row in id order (as the CPU backend does
// when nothing is cut). Weights and masses are float64, as on the CPU;
// block reductions run in a fixed order and the staged set is sorted
// before it is used, so the token does not depend on scheduling.
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

// rowx is a read of the logits row, counted under emu (GRPO_COUNT_READ) so
// the tests can bound the passes a row costs.
__device__ __forceinline__ float rowx(const float* x, int i) {
	GRPO_COUNT_READ(sizeof(float));
	return x[i];
}

struct SampleRow {
	const float* x;
	int vocab;
	double m, invT, floor;  // row max, 1/T, log(min_p) (−Inf when off)
	double* scratch;        // 32 doubles of shared memory
	// s is the processed logit (x − max)/T; cand and weight derive from
	// it, so every pass classifies a token alike.
	__device__ double s(float v) const { return ((double)v - m) * invT; }
	__device__ bool cand(float v) const {
		double sv = s(v);
		return sv >= floor && sv > -INFINITY;
	}
	__device__ double weight(float v) const { return exp(s(v)); }
	// count and mass of candidates with key ≥ t (every thread gets them).
	__device__ double count_ge(unsigned t) const {
		double c = 0.0;
		for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
			float v = rowx(x, i);
			c += (cand(v) && okey(v) >= t) ? 1.0 : 0.0;
		}
		return block_sum_f64(c, scratch);
	}
	__device__ double mass_ge(unsigned t) const {
		double s = 0.0;
		for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
			float v = rowx(x, i);
			if (cand(v) && okey(v) >= t) s += weight(v);
		}
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
			float v = rowx(R.x, i);
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

// The staged path's sizes: SAMPLE_BINS histogram bins of width
// 1/SAMPLE_BIN_SCALE in s (the last bin takes everything below), and at
// most SAMPLE_STAGE staged candidates (a power of two, for the sort).
#define SAMPLE_BINS 1024
#define SAMPLE_BIN_SCALE 32.0
#define SAMPLE_STAGE 2048

// sample_bin is the histogram bin of processed logit s ≤ 0: bin b holds
// s ∈ (−(b+1)/32, −b/32], so a larger s never lands in a later bin.
__device__ __forceinline__ int sample_bin(double s) {
	double b = -s * SAMPLE_BIN_SCALE;
	return b < SAMPLE_BINS - 1 ? (int)b : SAMPLE_BINS - 1;
}

// sample_bin_low is a lower bound of the weight e^s of a token in bin b:
// e^{−(b+1)/32} rounded down a little (1e-12 relative covers exp's
// rounding), 0 for the last bin, which is unbounded below.
__device__ __forceinline__ double sample_bin_low(int b) {
	return b < SAMPLE_BINS - 1 ? exp(-(b + 1) / SAMPLE_BIN_SCALE) * (1.0 - 1e-12) : 0.0;
}

// sample_stage_bound runs on warp 0 and writes out[0] = the last bin to
// stage (−1: none will do) and out[1] = the candidates in bins 0..out[0].
// With a top-k (k ≥ 0) it is the bin holding the k-th candidate, so the
// whole top-k set is staged and its mass is summed exactly; with top-p
// alone (need = top_p·mass ≥ 0) it is the first bin whose lower mass bound
// (count·e^{s_lo}, s_lo the bin's lower edge; 0 for the last bin) reaches
// need with a 1e-9 margin, far above the float64 rounding of any sum of
// ≤ 2048 terms, so the sorted cut lies inside the staged set.
__device__ void sample_stage_bound(const int* hist, double k, double need, int* out) {
	const int per = SAMPLE_BINS / 32;
	int lane = threadIdx.x;
	bool byCount = k >= 0.0;
	double target = byCount ? k : need * (1.0 + 1e-9);
	double local = 0.0, count = 0.0;
	for (int j = 0; j < per; j++) {
		int b = lane * per + j;
		count += hist[b];
		local += byCount ? hist[b] : hist[b] * sample_bin_low(b);
	}
	double incl = local, n = count;
	for (int o = 1; o < 32; o <<= 1) {
		double a = __shfl_up_sync(GRPO_FULL_MASK, incl, o), c = __shfl_up_sync(GRPO_FULL_MASK, n, o);
		if (lane >= o) incl += a, n += c;
	}
	unsigned hit = __ballot_sync(GRPO_FULL_MASK, incl >= target);
	if (hit == 0) {
		if (lane == 0) out[0] = -1, out[1] = 0;
		return;
	}
	int first = __ffs(hit) - 1;
	if (lane != first) return;
	double cum = incl - local, staged = n - count;
	int b = lane * per;
	for (;; b++) {
		cum += byCount ? hist[b] : hist[b] * sample_bin_low(b);
		staged += hist[b];
		if (cum >= target || b == lane * per + per - 1) break;
	}
	out[0] = b;
	out[1] = staged > SAMPLE_STAGE ? SAMPLE_STAGE + 1 : (int)staged;
}

// sample_stage writes the candidates of bins 0..last into keys, as
// (key of the logit, −0 read as +0) << 32 | (2³²−1 − id), sorts them
// descending (largest logit first, then lowest id), and returns their
// count (≤ SAMPLE_STAGE, as sample_stage_bound counted). The slots are
// taken in any order; the sort makes the result independent of it. n is
// one int of shared memory.
__device__ int sample_stage(const SampleRow& R, int last, unsigned long long* keys, int* n) {
	if (threadIdx.x == 0) *n = 0;
	__syncthreads();
	for (int i = threadIdx.x; i < R.vocab; i += blockDim.x) {
		float v = rowx(R.x, i);
		if (R.cand(v) && sample_bin(R.s(v)) <= last) {
			int slot = atomicAdd(n, 1);
			keys[slot] = (unsigned long long)okey(v == 0.0f ? 0.0f : v) << 32 | (0xffffffffu - (unsigned)i);
		}
	}
	__syncthreads();
	int count = *n, p = 1;
	while (p < count) p <<= 1;
	for (int i = count + threadIdx.x; i < p; i += blockDim.x) keys[i] = 0;  // below every real key
	__syncthreads();
	// Bitonic sort, descending.
	for (int size = 2; size <= p; size <<= 1)
		for (int stride = size >> 1; stride > 0; stride >>= 1) {
			for (int i = threadIdx.x; i < p; i += blockDim.x) {
				int j = i ^ stride;
				if (j > i) {
					bool desc = (i & size) == 0;
					unsigned long long a = keys[i], b = keys[j];
					if (desc ? a < b : a > b) keys[i] = b, keys[j] = a;
				}
			}
			__syncthreads();
		}
	return count;
}

// sample_staged cuts and draws from the n staged candidates, sorted: the
// first k (k < 0: no top-k; then the kept mass is the row's, zAll,
// block-summed as the untruncated path sums it, and nCand candidates are
// kept), then the shortest prefix with mass ≥ top_p of theirs (or all of
// them: the CPU stops at the last kept candidate too), then the inverse CDF at u — sums in
// sorted order by one thread, the CPU backend's arithmetic. It returns
// the token, or −1 when the top-p cut was not inside the staged set
// (the caller falls back). ws is SAMPLE_STAGE doubles of shared memory,
// tok one int.
__device__ int sample_staged(const SampleRow& R, const unsigned long long* keys, double* ws, int n, int k, int nCand, double zAll,
			     double topP, double u, int* tok) {
	for (int i = threadIdx.x; i < n; i += blockDim.x) ws[i] = R.weight(from_okey((unsigned)(keys[i] >> 32)));
	__syncthreads();
	if (threadIdx.x == 0) {
		int kept = k >= 0 ? k : nCand;
		double zK = zAll;
		if (k >= 0) {
			zK = 0.0;
			for (int i = 0; i < k; i++) zK += ws[i];
		}
		int q = min(kept, n);  // kept ≤ n when there is a top-k or top_p is off
		if (topP < 1.0) {
			double need = topP * zK, cum = 0.0;
			q = -1;
			for (int i = 0; i < min(kept, n); i++) {
				cum += ws[i];
				if (cum >= need || i == kept - 1) {
					q = i + 1;
					break;
				}
			}
		}
		int t = -1;
		if (q > 0) {
			double z = 0.0;
			for (int i = 0; i < q; i++) z += ws[i];
			double target = u * z, cum = 0.0;
			int pick = q - 1;
			for (int i = 0; i < q; i++) {
				cum += ws[i];
				if (cum > target) {
					pick = i;
					break;
				}
			}
			t = (int)(0xffffffffu - (unsigned)(keys[pick] & 0xffffffffu));
		}
		*tok = t;
	}
	__syncthreads();
	int t = *tok;
	__syncthreads();  // read before the caller's shared memory is reused
	return t;
}

// sample_by_search is the fallback for a row whose cut does not fit the
// stage: top-k, top-p and the draw by bitwise threshold searches, each
// step a pass over the row.
__device__ int sample_by_search(const SampleRow& R, double k, double topP, double uu, int argmax, double* wsum, int* found) {
	int tok;
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
	tok = first_crossing(R, 1, thS, j, wsum, found);
	if (tok < 0) tok = argmax;  // unreachable: j < the ties at θs
	return tok;
}

GRPO_KERNEL void __launch_bounds__(1024) sample_f32(int* token, float* logprob, const float* logits, const double* params, int rows,
			    int vocab) {
	GRPO_SHARED(double, scratch, [32]);
	GRPO_SHARED(double, wsum, [32]);
	GRPO_SHARED(float, fscratch, [32]);
	GRPO_SHARED(int, found, [1]);
	GRPO_SHARED(int, hist, [SAMPLE_BINS]);
	GRPO_SHARED(unsigned long long, keys, [SAMPLE_STAGE]);
	GRPO_SHARED(double, ws, [SAMPLE_STAGE]);
	GRPO_SHARED(int, stage, [4]);
	long long r = blockIdx.x;
	const float* x = logits + r * vocab;
	const double* pr = params + 5 * r;
	double uu = pr[0], temperature = pr[1], topP = pr[2], minP = pr[3];
	int topK = (int)pr[4];

	// Row max, then the error flag: NaN or +Inf anywhere, or no finite
	// logit (fmaxf skips NaN, so the flag is its own reduction).
	float mx = -INFINITY, bad = 0.0f;
	for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
		float v = rowx(x, i);
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
	// Pass 2: the raw normaliser, the argmax (the lowest id holding the
	// max, as a float block-min: ids < 2²⁴ are exact in float), and at
	// T > 0 the candidates' count, mass and histogram.
	double m = mx;
	SampleRow R{x, vocab, m, temperature > 0.0 ? 1.0 / temperature : 0.0, minP > 0.0 ? log(minP) : -INFINITY,
		    scratch};
	bool draws = temperature > 0.0;
	if (draws) {
		for (int b = threadIdx.x; b < SAMPLE_BINS; b += blockDim.x) hist[b] = 0;
		__syncthreads();
	}
	double z1 = 0.0, cnt = 0.0, mass = 0.0;
	float firstMax = (float)vocab;
	for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
		float v = rowx(x, i);
		z1 += exp((double)v - m);
		if (v == mx) firstMax = fminf(firstMax, (float)i);
		if (draws && R.cand(v)) {
			cnt += 1.0;
			mass += R.weight(v);
			atomicAdd(&hist[sample_bin(R.s(v))], 1);
		}
	}
	z1 = block_sum_f64(z1, scratch);
	int argmax = (int)-block_max(-firstMax, fscratch);
	double nCand = draws ? block_sum_f64(cnt, scratch) : 0.0;
	double zAll = draws ? block_sum_f64(mass, scratch) : 0.0;

	int tok = argmax;
	if (nCand > 0.0) {
		double k = (topK > 0 && topK < nCand) ? topK : nCand;
		if (k == nCand && topP >= 1.0) {
			// Nothing cut: inverse CDF in id order, as on the CPU.
			int t = first_crossing(R, 0, 0, uu * zAll, wsum, found);
			if (t < 0) {  // rounding put the target at the very end: the last candidate
				float last = -1.0f;
				for (int i = threadIdx.x; i < vocab; i += blockDim.x)
					if (R.cand(rowx(x, i))) last = fmaxf(last, (float)i);
				t = (int)block_max(last, fscratch);
			}
			tok = t;
		} else {
			// Pass 3: stage the bins that can hold the cut, sort them, and
			// cut and draw in sorted order.
			if (threadIdx.x < 32) sample_stage_bound(hist, k < nCand ? k : -1.0, topP < 1.0 ? topP * zAll : -1.0, stage);
			__syncthreads();
			int last = stage[0];
			tok = -1;
			if (last >= 0 && stage[1] <= SAMPLE_STAGE) {
				int n = sample_stage(R, last, keys, stage + 2);
				tok = sample_staged(R, keys, ws, n, k < nCand ? (int)k : -1, (int)nCand, zAll, topP, uu, stage + 3);
			}
			if (tok < 0) tok = sample_by_search(R, k, topP, uu, argmax, wsum, found);
		}
	}
	if (threadIdx.x == 0) {
		token[r] = tok;
		logprob[r] = (float)((double)x[tok] - m - log(z1));
	}
}
