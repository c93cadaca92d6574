//go:build cgo

package cpu

/*
#cgo CFLAGS: -O3 -Wno-psabi
#include "vec.h"

// cgo cannot call through a C function pointer; these do.
static void grpo_exp(const struct grpo_vec *v, float *out, const float *x, long n) { v->exp(out, x, n); }
static void grpo_expd(const struct grpo_vec *v, double *out, const double *x, long n) { v->expd(out, x, n); }
static double grpo_sample_exps(const struct grpo_vec *v, double *w, const float *x, long n, double max, double invT) {
	return v->sample_exps(w, x, n, max, invT);
}
static void grpo_swiglu(const struct grpo_vec *v, float *out, const float *g, const float *u, long n) { v->swiglu(out, g, u, n); }
static void grpo_swiglu_bwd(const struct grpo_vec *v, float *dg, float *du, const float *dy, const float *g, const float *u, long n) {
	v->swiglu_bwd(dg, du, dy, g, u, n);
}
static void grpo_lse_stats(const struct grpo_vec *v, const float *x, long n, float *max, double *z, double *zx) {
	v->lse_stats(x, n, max, z, zx);
}
static void grpo_exp_scale(const struct grpo_vec *v, float *out, const float *x, long n, float sub, double scale) {
	v->exp_scale(out, x, n, sub, scale);
}
static double grpo_softmax_row(const struct grpo_vec *v, float *x, long n, float *max) { return v->softmax_row(x, n, max); }
static void grpo_exp_below(const struct grpo_vec *v, float *x, long n, double l) { v->exp_below(x, n, l); }
static void grpo_add(const struct grpo_vec *v, float *out, const float *a, const float *b, long n) { v->add(out, a, b, n); }
static void grpo_add_bias(const struct grpo_vec *v, float *x, const float *bias, long rows, long cols) { v->add_bias(x, bias, rows, cols); }
static void grpo_rmsnorm(const struct grpo_vec *v, float *out, float *rstd, const float *x, const float *w, long rows, long dim, float eps) {
	v->rmsnorm(out, rstd, x, w, rows, dim, eps);
}
static void grpo_rmsnorm_bwd(const struct grpo_vec *v, float *dx, const float *dy, const float *x, const float *w, const float *rstd,
	long rows, long dim, int accumulate) {
	v->rmsnorm_bwd(dx, dy, x, w, rstd, rows, dim, accumulate);
}
static void grpo_adamw(const struct grpo_vec *v, float *p, const float *g, float *m, float *s, long n,
	double b1, double b2, double c1, double c2, double lr, double wd, double eps) {
	v->adamw(p, g, m, s, n, b1, b2, c1, c2, lr, wd, eps);
}
*/
import "C"

import "unsafe"

// vecTable is one instruction set's C kernels (vec.c). Every method takes
// non-empty slices of the lengths its op checked.
type vecTable struct {
	t    *C.struct_grpo_vec
	name string
}

var isaNames = [...]string{C.GRPO_ISA_SSE2: "sse2", C.GRPO_ISA_AVX2: "avx2", C.GRPO_ISA_AVX512: "avx512"}

// vecISAs lists the instruction sets this CPU runs, narrowest first.
func vecISAs() []string { return isaNames[:C.grpo_vec_best()+1] }

// vecLoad returns the kernels for the named instruction set (one of
// vecISAs), fault 0 for the real ones; 1 and 2 are the broken copies the
// mutant tests use (vec_kernels.h).
func vecLoad(isa string, fault int) *vecTable {
	for i, n := range isaNames {
		if n == isa {
			if t := C.grpo_vec_get(C.int(i), C.int(fault)); t != nil {
				return &vecTable{t: t, name: n}
			}
		}
	}
	return nil
}

func fp(s []float32) *C.float { return (*C.float)(unsafe.Pointer(&s[0])) }

func (v *vecTable) exp(out, x []float32) {
	C.grpo_exp(v.t, fp(out), fp(x), C.long(len(x)))
}

func (v *vecTable) expd(out, x []float64) {
	C.grpo_expd(v.t, (*C.double)(unsafe.Pointer(&out[0])), (*C.double)(unsafe.Pointer(&x[0])), C.long(len(x)))
}

// sampleExps sets w[i] = e^((row[i]−max)·invT) and returns Σe^(row[i]−max).
func (v *vecTable) sampleExps(w []float64, row []float32, max, invT float64) float64 {
	return float64(C.grpo_sample_exps(v.t, (*C.double)(unsafe.Pointer(&w[0])), fp(row), C.long(len(row)), C.double(max), C.double(invT)))
}

func (v *vecTable) swiGLU(out, gate, up []float32) {
	C.grpo_swiglu(v.t, fp(out), fp(gate), fp(up), C.long(len(out)))
}

func (v *vecTable) swiGLUBackward(dgate, dup, dy, gate, up []float32) {
	C.grpo_swiglu_bwd(v.t, fp(dgate), fp(dup), fp(dy), fp(gate), fp(up), C.long(len(dy)))
}

// lseStats returns the row's maximum, Σe^(x−max) and Σe^(x−max)·(x−max).
func (v *vecTable) lseStats(row []float32) (mx float32, z, zx float64) {
	var m C.float
	var cz, czx C.double
	C.grpo_lse_stats(v.t, fp(row), C.long(len(row)), &m, &cz, &czx)
	return float32(m), float64(cz), float64(czx)
}

// expScale sets out = scale·e^(x−sub).
func (v *vecTable) expScale(out, x []float32, sub float32, scale float64) {
	C.grpo_exp_scale(v.t, fp(out), fp(x), C.long(len(x)), C.float(sub), C.double(scale))
}

// softmaxRow replaces row by e^(row−max) and returns max and the sum.
func (v *vecTable) softmaxRow(row []float32) (mx float32, sum float64) {
	var m C.float
	s := C.grpo_softmax_row(v.t, fp(row), C.long(len(row)), &m)
	return float32(m), float64(s)
}

// expBelow sets x = e^min(x−l, 0).
func (v *vecTable) expBelow(x []float32, l float64) {
	C.grpo_exp_below(v.t, fp(x), C.long(len(x)), C.double(l))
}

func (v *vecTable) add(out, a, b []float32) {
	C.grpo_add(v.t, fp(out), fp(a), fp(b), C.long(len(out)))
}

func (v *vecTable) addBias(x, bias []float32, rows int) {
	C.grpo_add_bias(v.t, fp(x), fp(bias), C.long(rows), C.long(len(bias)))
}

// rmsNorm normalises rows of x (len(w) wide); rstd may be nil.
func (v *vecTable) rmsNorm(out, rstd, x, w []float32, rows int, eps float32) {
	var rs *C.float
	if rstd != nil {
		rs = fp(rstd)
	}
	C.grpo_rmsnorm(v.t, fp(out), rs, fp(x), fp(w), C.long(rows), C.long(len(w)), C.float(eps))
}

func (v *vecTable) rmsNormBackward(dx, dy, x, w, rstd []float32, rows int, accumulate bool) {
	acc := C.int(0)
	if accumulate {
		acc = 1
	}
	C.grpo_rmsnorm_bwd(v.t, fp(dx), fp(dy), fp(x), fp(w), fp(rstd), C.long(rows), C.long(len(w)), acc)
}

func (v *vecTable) adamW(p, g, m, s []float32, b1, b2, c1, c2, lr, wd, eps float64) {
	C.grpo_adamw(v.t, fp(p), fp(g), fp(m), fp(s), C.long(len(p)),
		C.double(b1), C.double(b2), C.double(c1), C.double(c2), C.double(lr), C.double(wd), C.double(eps))
}
