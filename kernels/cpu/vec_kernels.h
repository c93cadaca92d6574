// The elementwise kernels of the CPU backend's fast path, written once in
// GCC vector extensions and compiled once per instruction set by vec.c,
// which includes this file with these macros defined:
//
//   SFX    the name suffix (sse2, avx2, avx512)
//   W      float lanes per vector (4, 8, 16)
//   FAULT  0 for the real kernels; 1 and 2 build deliberately broken
//          copies (1: lane 3 of every exp vector, float32 or float64,
//          skips the 2^k scaling;
//          2: the tail of an exp loop drops its last element) that the
//          mutant tests prove the conformance suite catches.
//
// Every loop whose length need not be a multiple of W finishes with one
// more vector over a zero-padded copy of the tail, so each element goes
// through the same instructions whatever n is and however the Go side
// split the work: results do not depend on the split.

#define GRPO_CAT2(a, b) a##_##b
#define GRPO_CAT(a, b) GRPO_CAT2(a, b)
#define GRPO_FN(name) GRPO_CAT(GRPO_CAT(grpo, name), GRPO_CAT(SFX, FAULT))

#define VF GRPO_CAT(vf, SFX)
#define VI GRPO_CAT(vi, SFX)
#define VD GRPO_CAT(vd, SFX)

// aligned(4): loads and stores through these types may be unaligned.
typedef float VF __attribute__((vector_size(W * 4), aligned(4), may_alias));
typedef int VI __attribute__((vector_size(W * 4), aligned(4), may_alias));
typedef double VD __attribute__((vector_size(W * 8), aligned(8), may_alias));
#define VL GRPO_CAT(vl, SFX)
typedef long long VL __attribute__((vector_size(W * 8), aligned(8), may_alias));

// A loop's last n < W elements go through one more vector, over a
// zero-padded copy; GRPO_TAIL_KEEP(n) of them are stored back (FAULT 2
// forgets the last one).
#if FAULT == 2
#define GRPO_TAIL_KEEP(n) ((n) - 1)
#else
#define GRPO_TAIL_KEEP(n) (n)
#endif

static inline VF GRPO_FN(splat)(float v) { return (VF){} + v; }

// sel(m, a, b): a where the mask m is set, b elsewhere.
static inline VF GRPO_FN(sel)(VI m, VF a, VF b) { return (VF)((m & (VI)a) | (~m & (VI)b)); }

// vexp is e^x for every lane in float32: Cody–Waite reduction x = k·ln2 +
// r, |r| ≤ ln2/2, and Cephes' degree-7 expf polynomial. Measured against
// float64 math.Exp over every float32 in [−104, 89] (vec_test.go) it is
// within 1 ulp; results below 2⁻¹²⁶ are correctly scaled subnormals (2^k
// is applied as two factors, so k down to −150 needs no special case) and
// the result overflows to +Inf exactly where e^x does. x is clamped to
// [−104, 89] (e^−104 rounds to 0, e^89 to +Inf), so ±Inf give 0 and +Inf;
// the clamp keeps NaN, and NaN gives NaN.
static inline VF GRPO_FN(vexp)(VF x) {
	const VF lo = GRPO_FN(splat)(-104.0f), hi = GRPO_FN(splat)(89.0f);
	x = GRPO_FN(sel)(x < lo, lo, x);
	x = GRPO_FN(sel)(x > hi, hi, x);
	const float shifter = 0x1.8p23f; // adding it rounds to an integer
	VF fk = (x * 1.44269504088896341f + shifter) - shifter;
	VF r = x - fk * 0.693359375f; // 0.693359375 has 9 bits: k·it is exact
	r = r - fk * -2.12194440e-4f;
	VF z = r * r;
	VF p = 1.9875691500e-4f * r + 1.3981999507e-3f;
	p = p * r + 8.3334519073e-3f;
	p = p * r + 4.1665795894e-2f;
	p = p * r + 1.6666665459e-1f;
	p = p * r + 5.0000001201e-1f;
	p = p * z + r + 1.0f;
	VI k = __builtin_convertvector(fk, VI);
	VI k1 = k >> 1, k2 = k - k1; // each in [−75, 65]: normal powers of two
	VF s1 = (VF)((k1 + 127) << 23), s2 = (VF)((k2 + 127) << 23);
#if FAULT == 1
	s1[3] = 1.0f;
	s2[3] = 1.0f;
#endif
	return p * s1 * s2;
}

static inline double GRPO_FN(hsum)(VD v);

static inline VD GRPO_FN(seld)(VL m, VD a, VD b) { return (VD)((m & (VL)a) | (~m & (VL)b)); }

// vexpd is e^x for every lane in float64, for the sampler (whose
// log-probs are float64): the same reduction with ln 2 split in two and
// the Taylor series to r¹³ (truncation ≤ 4.4e-18 for |r| ≤ ln2/2), so
// rounding dominates: within 2 ulp of math.Exp (vec_test.go). x is
// clamped to [−746, 710], so −Inf gives 0 and +Inf gives +Inf; NaN stays
// NaN.
static inline VD GRPO_FN(vexpd)(VD x) {
	const VD lo = (VD){} - 746.0, hi = (VD){} + 710.0;
	x = GRPO_FN(seld)(x < lo, lo, x);
	x = GRPO_FN(seld)(x > hi, hi, x);
	const double shifter = 0x1.8p52;
	VD t = x * 1.4426950408889634 + shifter;
	VD fk = t - shifter;
	VD r = x - fk * 6.93147180369123816490e-01; // 32-bit ln2Hi: k·it is exact
	r = r - fk * 1.90821492927058770002e-10;
	VD p = 1.0 / 6227020800 * r + 1.0 / 479001600;
	p = p * r + 1.0 / 39916800;
	p = p * r + 1.0 / 3628800;
	p = p * r + 1.0 / 362880;
	p = p * r + 1.0 / 40320;
	p = p * r + 1.0 / 5040;
	p = p * r + 1.0 / 720;
	p = p * r + 1.0 / 120;
	p = p * r + 1.0 / 24;
	p = p * r + 1.0 / 6;
	p = p * r + 0.5;
	p = p * (r * r) + r + 1.0;
	VL k = (VL)t - (VL)((VD){} + shifter); // t's low mantissa bits hold k
	VL k1 = k >> 1, k2 = k - k1;           // each in [−538, 512]
	VD s1 = (VD)((k1 + 1023) << 52), s2 = (VD)((k2 + 1023) << 52);
#if FAULT == 1
	s1[3] = 1.0;
	s2[3] = 1.0;
#endif
	return p * s1 * s2;
}

// sample_exps is the sampler's exp pass over a row (sample.go): with d =
// x − max, w[i] = e^(d·invT) (e^d itself when invT is 1), and the return
// value Σe^d, in float64.
static double GRPO_FN(sample_exps)(double *w, const float *x, long n, double max, double invT) {
	VD z = {};
	long i = 0;
	for (; i + W <= n; i += W) {
		VD d = __builtin_convertvector(*(const VF *)(x + i), VD) - max;
		VD e = GRPO_FN(vexpd)(d);
		z += e;
		*(VD *)(w + i) = invT == 1 ? e : GRPO_FN(vexpd)(d * invT);
	}
	if (i < n) {
		double t[W];
		for (long j = 0; j < W; j++) t[j] = i + j < n ? (double)x[i + j] - max : -__builtin_inf();
		VD d = *(VD *)t;
		VD e = GRPO_FN(vexpd)(d);
		z += e;
		VD s = invT == 1 ? e : GRPO_FN(vexpd)(d * invT);
		for (long j = 0; j < GRPO_TAIL_KEEP(n - i); j++) w[i + j] = s[j];
	}
	return GRPO_FN(hsum)(z);
}

// expd is vexpd over an array (for its test).
static void GRPO_FN(expd)(double *out, const double *x, long n) {
	long i = 0;
	for (; i + W <= n; i += W) *(VD *)(out + i) = GRPO_FN(vexpd)(*(const VD *)(x + i));
	if (i < n) {
		double t[W] = {0};
		for (long j = 0; j < n - i; j++) t[j] = x[i + j];
		VD y = GRPO_FN(vexpd)(*(VD *)t);
		for (long j = 0; j < GRPO_TAIL_KEEP(n - i); j++) out[i + j] = y[j];
	}
}


static void GRPO_FN(exp)(float *out, const float *x, long n) {
	long i = 0;
	for (; i + W <= n; i += W) *(VF *)(out + i) = GRPO_FN(vexp)(*(const VF *)(x + i));
	if (i < n) {
		float t[W] = {0};
		for (long j = 0; j < n - i; j++) t[j] = x[i + j];
		VF y = GRPO_FN(vexp)(*(VF *)t);
		for (long j = 0; j < GRPO_TAIL_KEEP(n - i); j++) out[i + j] = y[j];
	}
}

// SwiGLU: g·σ(g)·u with σ(g) = 1/(1+e^−g); for g ≪ 0, e^−g is +Inf and
// the quotient the correct −0.
static inline VF GRPO_FN(swiglu1)(VF g, VF u) { return g / (1.0f + GRPO_FN(vexp)(-g)) * u; }

static void GRPO_FN(swiglu)(float *out, const float *gate, const float *up, long n) {
	long i = 0;
	for (; i + W <= n; i += W)
		*(VF *)(out + i) = GRPO_FN(swiglu1)(*(const VF *)(gate + i), *(const VF *)(up + i));
	if (i < n) {
		float g[W] = {0}, u[W] = {0};
		for (long j = 0; j < n - i; j++) g[j] = gate[i + j], u[j] = up[i + j];
		VF y = GRPO_FN(swiglu1)(*(VF *)g, *(VF *)u);
		for (long j = 0; j < GRPO_TAIL_KEEP(n - i); j++) out[i + j] = y[j];
	}
}

// SwiGLU backward: dgate = dy·u·σ·(1 + g·(1−σ)), dup = dy·g·σ. 1−σ is
// e^−g·σ for g ≥ 0 (where 1 − σ would cancel) and 1 − σ below (where
// e^−g may be +Inf). Both outputs are computed before either is stored, so
// they may alias the inputs.
static inline void GRPO_FN(swiglu_bwd1)(VF d, VF g, VF u, VF *dg, VF *du) {
	VF e = GRPO_FN(vexp)(-g);
	VF sig = 1.0f / (1.0f + e);
	VF oms = GRPO_FN(sel)(g >= 0.0f, e * sig, 1.0f - sig);
	*dg = d * u * sig * (1.0f + g * oms);
	*du = d * g * sig;
}

static void GRPO_FN(swiglu_bwd)(float *dgate, float *dup, const float *dy, const float *gate, const float *up, long n) {
	long i = 0;
	for (; i + W <= n; i += W) {
		VF dg, du;
		GRPO_FN(swiglu_bwd1)(*(const VF *)(dy + i), *(const VF *)(gate + i), *(const VF *)(up + i), &dg, &du);
		*(VF *)(dgate + i) = dg;
		*(VF *)(dup + i) = du;
	}
	if (i < n) {
		float d[W] = {0}, g[W] = {0}, u[W] = {0};
		for (long j = 0; j < n - i; j++) d[j] = dy[i + j], g[j] = gate[i + j], u[j] = up[i + j];
		VF dg, du;
		GRPO_FN(swiglu_bwd1)(*(VF *)d, *(VF *)g, *(VF *)u, &dg, &du);
		for (long j = 0; j < GRPO_TAIL_KEEP(n - i); j++) dgate[i + j] = dg[j], dup[i + j] = du[j];
	}
}

// hsum adds the lanes of a float64 vector in lane order.
static inline double GRPO_FN(hsum)(VD v) {
	double s = 0;
	for (int j = 0; j < W; j++) s += v[j];
	return s;
}

// rowmax is the maximum of x[0..n), NaN if any element is NaN (as Go's
// max), −Inf for a row of −Inf.
static float GRPO_FN(rowmax)(const float *x, long n) {
	VF m = GRPO_FN(splat)(-__builtin_inff());
	long i = 0;
	for (; i + W <= n; i += W) {
		VF v = *(const VF *)(x + i);
		m = GRPO_FN(sel)((v > m) | (v != v), v, m);
	}
	float mx = -__builtin_inff();
	for (int j = 0; j < W; j++)
		if (m[j] > mx || m[j] != m[j]) mx = m[j];
	for (; i < n; i++)
		if (x[i] > mx || x[i] != x[i]) mx = x[i];
	return mx;
}

// lse_stats: for one row of logits, its maximum, z = Σe^(x−max) and zx =
// Σe^(x−max)·(x−max), the exps in float32 and both sums in float64.
static void GRPO_FN(lse_stats)(const float *x, long n, float *max, double *z, double *zx) {
	float mx = GRPO_FN(rowmax)(x, n);
	VD az = {}, azx = {};
	long i = 0;
	for (; i + W <= n; i += W) {
		VF d = *(const VF *)(x + i) - mx;
		VD e = __builtin_convertvector(GRPO_FN(vexp)(d), VD), dd = __builtin_convertvector(d, VD);
		az += e;
		azx += e * dd;
	}
	if (i < n) {
		float t[W];
		for (int j = 0; j < W; j++) t[j] = i + j < n ? x[i + j] - mx : -__builtin_inff();
		VF d = *(VF *)t;
		VF ef = GRPO_FN(vexp)(d);
		for (long j = 0; j < GRPO_TAIL_KEEP(n - i); j++) {
			az[j] += ef[j];
			azx[j] += (double)ef[j] * d[j];
		}
	}
	*max = mx;
	*z = GRPO_FN(hsum)(az);
	*zx = GRPO_FN(hsum)(azx);
}

// exp_scale: out = (float)(scale·e^(x−sub)), the exp in float32, the
// product in float64.
static void GRPO_FN(exp_scale)(float *out, const float *x, long n, float sub, double scale) {
	long i = 0;
	for (; i + W <= n; i += W) {
		VD e = __builtin_convertvector(GRPO_FN(vexp)(*(const VF *)(x + i) - sub), VD);
		*(VF *)(out + i) = __builtin_convertvector(e * scale, VF);
	}
	if (i < n) {
		float t[W] = {0};
		for (long j = 0; j < n - i; j++) t[j] = x[i + j] - sub;
		VD e = __builtin_convertvector(GRPO_FN(vexp)(*(VF *)t), VD);
		VF y = __builtin_convertvector(e * scale, VF);
		for (long j = 0; j < GRPO_TAIL_KEEP(n - i); j++) out[i + j] = y[j];
	}
}

// softmax_row replaces x[0..n) by e^(x−max) in float32 and returns
// Σe^(x−max) in float64 (the caller scales by its inverse), max in *max.
static double GRPO_FN(softmax_row)(float *x, long n, float *max) {
	float mx = GRPO_FN(rowmax)(x, n);
	VD s = {};
	long i = 0;
	for (; i + W <= n; i += W) {
		VF e = GRPO_FN(vexp)(*(const VF *)(x + i) - mx);
		*(VF *)(x + i) = e;
		s += __builtin_convertvector(e, VD);
	}
	double sum = GRPO_FN(hsum)(s);
	if (i < n) {
		float t[W] = {0};
		for (long j = 0; j < n - i; j++) t[j] = x[i + j] - mx;
		VF e = GRPO_FN(vexp)(*(VF *)t);
		for (long j = 0; j < GRPO_TAIL_KEEP(n - i); j++) x[i + j] = e[j], sum += e[j];
	}
	*max = mx;
	return sum;
}

// exp_below: x = e^min(x−l, 0), the difference taken in float64 (as the
// Go path does), rounded to float32 for the exp.
static void GRPO_FN(exp_below)(float *x, long n, double l) {
	long i = 0;
	for (; i + W <= n; i += W) {
		VD d = __builtin_convertvector(*(const VF *)(x + i), VD) - l;
		VF f = __builtin_convertvector(d, VF);
		*(VF *)(x + i) = GRPO_FN(vexp)(GRPO_FN(sel)(f > 0.0f, GRPO_FN(splat)(0.0f), f));
	}
	if (i < n) {
		float t[W] = {0};
		for (long j = 0; j < n - i; j++) {
			double d = x[i + j] - l;
			t[j] = d > 0 ? 0 : (float)d;
		}
		VF e = GRPO_FN(vexp)(*(VF *)t);
		for (long j = 0; j < GRPO_TAIL_KEEP(n - i); j++) x[i + j] = e[j];
	}
}

// Add and AddBias need no tail of their own: plain loops that -O3
// vectorises for the target.

static void GRPO_FN(add)(float *out, const float *a, const float *b, long n) {
	for (long i = 0; i < n; i++) out[i] = a[i] + b[i];
}

static void GRPO_FN(add_bias)(float *x, const float *bias, long rows, long cols) {
	for (long r = 0; r < rows; r++) {
		float *row = x + r * cols;
		for (long c = 0; c < cols; c++) row[c] += bias[c];
	}
}

// sumsq is Σx² in float64, in W lanes then added in lane order.
static double GRPO_FN(sumsq)(const float *x, long n) {
	VD acc = {};
	long i = 0;
	for (; i + W <= n; i += W) {
		VD v = __builtin_convertvector(*(const VF *)(x + i), VD);
		acc += v * v;
	}
	double s = GRPO_FN(hsum)(acc);
	for (; i < n; i++) s += (double)x[i] * x[i];
	return s;
}

// rmsnorm: out = x·r·w with r = 1/√(mean(x²) + eps), all in float64 and
// rounded once; rstd (may be NULL) gets r.
static void GRPO_FN(rmsnorm)(float *out, float *rstd, const float *x, const float *w, long rows, long dim, float eps) {
	for (long r = 0; r < rows; r++) {
		const float *xr = x + r * dim;
		float *o = out + r * dim;
		double inv = 1 / grpo_sqrt1(GRPO_FN(sumsq)(xr, dim) / dim + eps);
		for (long i = 0; i < dim; i++) o[i] = (float)((double)xr[i] * inv * w[i]);
		if (rstd) rstd[r] = (float)inv;
	}
}

// rmsnorm_bwd: with g = w·dy, dx (+)= r·g − x·r³·mean(g·x), in float64.
// A row is read completely before it is written, so dx may alias dy.
static void GRPO_FN(rmsnorm_bwd)(float *dx, const float *dy, const float *x, const float *w, const float *rstd, long rows, long dim, int accumulate) {
	for (long r = 0; r < rows; r++) {
		const float *xr = x + r * dim, *dyr = dy + r * dim;
		float *dxr = dx + r * dim;
		VD acc = {};
		long i = 0;
		for (; i + W <= dim; i += W)
			acc += __builtin_convertvector(*(const VF *)(w + i), VD) * __builtin_convertvector(*(const VF *)(dyr + i), VD) *
			       __builtin_convertvector(*(const VF *)(xr + i), VD);
		double dot = GRPO_FN(hsum)(acc);
		for (; i < dim; i++) dot += (double)w[i] * dyr[i] * xr[i];
		double inv = rstd[r];
		double c = inv * inv * inv * dot / dim;
		if (accumulate)
			for (long j = 0; j < dim; j++) dxr[j] = (float)(inv * w[j] * dyr[j] - (double)xr[j] * c + dxr[j]);
		else
			for (long j = 0; j < dim; j++) dxr[j] = (float)(inv * w[j] * dyr[j] - (double)xr[j] * c);
	}
}

// vsqrt is √ of each lane; VD is two native registers (GRPO_HALF, with
// GRPO_SQRT_HALF its sqrt instruction, from vec.c). Plain sqrt() would
// keep errno's branch, which stops vectorisation, and cgo does not accept
// -fno-math-errno.
static inline VD GRPO_FN(vsqrt)(VD v) {
	union {
		VD v;
		GRPO_HALF h[2];
	} u = {v};
	u.h[0] = GRPO_SQRT_HALF(u.h[0]);
	u.h[1] = GRPO_SQRT_HALF(u.h[1]);
	return u.v;
}

typedef struct {
	double b1, b2, c1, c2, lr, wd, eps;
} GRPO_FN(adamw_params);

// adamw1 is the decoupled-decay update of W parameters, in float64 as the
// Go path.
static inline void GRPO_FN(adamw1)(float *p, const float *g, float *m, float *v, const GRPO_FN(adamw_params) * a) {
	VD gi = __builtin_convertvector(*(const VF *)g, VD);
	VD w = __builtin_convertvector(*(const VF *)p, VD) * (1 - a->lr * a->wd);
	VD mi = a->b1 * __builtin_convertvector(*(const VF *)m, VD) + (1 - a->b1) * gi;
	VD vi = a->b2 * __builtin_convertvector(*(const VF *)v, VD) + (1 - a->b2) * gi * gi;
	w -= a->lr * (mi / a->c1) / (GRPO_FN(vsqrt)(vi / a->c2) + a->eps);
	*(VF *)p = __builtin_convertvector(w, VF);
	*(VF *)m = __builtin_convertvector(mi, VF);
	*(VF *)v = __builtin_convertvector(vi, VF);
}

static void GRPO_FN(adamw)(float *p, const float *g, float *m, float *v, long n, double b1, double b2, double c1, double c2, double lr, double wd, double eps) {
	GRPO_FN(adamw_params) a = {b1, b2, c1, c2, lr, wd, eps};
	long i = 0;
	for (; i + W <= n; i += W) GRPO_FN(adamw1)(p + i, g + i, m + i, v + i, &a);
	if (i < n) {
		float tp[W] = {0}, tg[W] = {0}, tm[W] = {0}, tv[W] = {0};
		for (long j = 0; j < n - i; j++) tp[j] = p[i + j], tg[j] = g[i + j], tm[j] = m[i + j], tv[j] = v[i + j];
		GRPO_FN(adamw1)(tp, tg, tm, tv, &a);
		for (long j = 0; j < n - i; j++) p[i + j] = tp[j], m[i + j] = tm[j], v[i + j] = tv[j];
	}
}

static const struct grpo_vec GRPO_CAT(GRPO_CAT(grpo_vec, SFX), FAULT) = {
	.exp = GRPO_FN(exp),
	.expd = GRPO_FN(expd),
	.sample_exps = GRPO_FN(sample_exps),
	.swiglu = GRPO_FN(swiglu),
	.swiglu_bwd = GRPO_FN(swiglu_bwd),
	.lse_stats = GRPO_FN(lse_stats),
	.exp_scale = GRPO_FN(exp_scale),
	.softmax_row = GRPO_FN(softmax_row),
	.exp_below = GRPO_FN(exp_below),
	.add = GRPO_FN(add),
	.add_bias = GRPO_FN(add_bias),
	.rmsnorm = GRPO_FN(rmsnorm),
	.rmsnorm_bwd = GRPO_FN(rmsnorm_bwd),
	.adamw = GRPO_FN(adamw),
};

#undef VF
#undef VI
#undef VD
#undef VL
#undef GRPO_TAIL_KEEP
