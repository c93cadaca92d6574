// The table of fast elementwise kernels, one per instruction set (vec.c).
#ifndef GRPO_VEC_H
#define GRPO_VEC_H

enum { GRPO_ISA_SSE2 = 0, GRPO_ISA_AVX2 = 1, GRPO_ISA_AVX512 = 2 };

struct grpo_vec {
	void (*exp)(float *out, const float *x, long n);
	void (*expd)(double *out, const double *x, long n);
	double (*sample_exps)(double *w, const float *x, long n, double max, double invT);
	void (*swiglu)(float *out, const float *gate, const float *up, long n);
	void (*swiglu_bwd)(float *dgate, float *dup, const float *dy, const float *gate, const float *up, long n);
	void (*lse_stats)(const float *x, long n, float *max, double *z, double *zx);
	void (*exp_scale)(float *out, const float *x, long n, float sub, double scale);
	double (*softmax_row)(float *x, long n, float *max);
	void (*exp_below)(float *x, long n, double l);
	void (*add)(float *out, const float *a, const float *b, long n);
	void (*add_bias)(float *x, const float *bias, long rows, long cols);
	void (*rmsnorm)(float *out, float *rstd, const float *x, const float *w, long rows, long dim, float eps);
	void (*rmsnorm_bwd)(float *dx, const float *dy, const float *x, const float *w, const float *rstd, long rows, long dim, int accumulate);
	void (*adamw)(float *p, const float *g, float *m, float *v, long n, double b1, double b2, double c1, double c2, double lr, double wd, double eps);
};

// grpo_vec_best is the widest GRPO_ISA_* this CPU runs.
int grpo_vec_best(void);
// grpo_vec_get returns the kernels for isa (≤ grpo_vec_best()), fault 0
// for the real ones, or NULL.
const struct grpo_vec *grpo_vec_get(int isa, int fault);

#endif
