package kerneltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// The grouped GEMMs over bf16 activations (a bf16 model's MoE layers):
// GroupedMatMul's and GroupedMatMulMXFP4's A and C, GroupedMatMulTN's A
// and B, each F32 or BF16 — every combination but all-F32, which
// moe_cases.go holds. A BF16 operand is read widened; a BF16 C is read
// widened for beta and holds the f32 result rounded to nearest even once,
// so every stored value must be a bf16 value (compareBF16Stored). The
// reference takes every operand's stored (rounded) values. With bf16
// experts a backend may also round an f32 A to bf16 and sum on tensor
// cores (compareBF16GEMM: tolMatMul against the stored A, or
// tolMatMulBF16 against A rounded); with f32 experts (the experts' LoRA
// factors) and for GroupedMatMulTN the products are f32 and held to
// tolMatMul. Shapes: rows not a multiple of the 64-row tile, an expert
// with no rows (skewedExperts never picks the last expert), beta 0 over
// NaN and beta 1, both layouts of B, and the LoRA products' shapes (rank
// 8: the shrink x·Aᵀ, the expand xa·Bᵀ added into gate/up, dy·B, and
// dyB·A added into dx). Measured (cpu gonum, emu): a bf16 C within
// max-abs 3.7e-3 of scale (bf16's own rounding), at most 16 of 124908
// stored values (cpu; emu 10) the other bf16 neighbour of the
// reference's rounding; F32 outputs NMSE ≤ 3.3e-14, max-abs ≤ 4.2e-7.

// gmmActs are the dtypes of a grouped GEMM's two activation operands (A
// and C, or A and B for GroupedMatMulTN) other than both F32.
var gmmActs = [][2]kernels.DType{{kernels.BF16, kernels.F32}, {kernels.F32, kernels.BF16}, {kernels.BF16, kernels.BF16}}

// gmmBF16Shapes are the GroupedMatMul shapes of the bf16 cases (the
// gmmShape's bf16 field unused: each runs with f32 and bf16 experts).
var gmmBF16Shapes = []gmmShape{
	{9, 4, 2, 13, 17, true, false, 1, 0},
	{33, 8, 2, 70, 65, false, false, 0.5, 1},
	{100, 3, 2, 72, 88, true, false, 1, 1},
	{100, 3, 2, 88, 72, false, false, 1, 0},
	{40, 16, 4, 8, 72, true, false, 1, 0},  // shrink: x·Aᵀ
	{40, 16, 4, 72, 8, true, false, 2, 1},  // expand: y += s·xa·Bᵀ
	{40, 16, 4, 8, 72, false, false, 1, 0}, // dyB = dy·B
	{40, 16, 4, 72, 8, false, false, 2, 1}, // dx += s·dyB·A
}

func dtName(dt kernels.DType) string {
	if dt == kernels.BF16 {
		return "bf16"
	}
	return "f32"
}

// gmmC returns C's operand: NaN (beta 0: it must be overwritten) or
// uniform values, stored in dt; and the reference's C (its stored values,
// zeros for beta 0).
func (e *env) gmmC(dt kernels.DType, size int, beta float32) (*operand, []float64) {
	if beta == 0 {
		return e.floats("c", dt, nans(size), false), make([]float64, size)
	}
	c := e.floats("c", dt, e.uniform(size, 1), false)
	return c, c.values()
}

func groupedMatMulBF16Cases() []Case {
	var cs []Case
	for i, s := range gmmBF16Shapes {
		for _, bdt := range []kernels.DType{kernels.F32, kernels.BF16} {
			for j, act := range gmmActs {
				s, bdt, adt, cdt, seed := s, bdt, act[0], act[1], uint64(5800+10*i+j)
				name := fmt.Sprintf("rows=%d,experts=%d,n=%d,k=%d,tB=%v,B=%s,A=%s,C=%s,alpha=%g,beta=%g",
					s.tokens*s.topK, s.experts, s.n, s.k, s.transB, dtName(bdt), dtName(adt), dtName(cdt), s.alpha, s.beta)
				cs = append(cs, Case{Op: "GroupedMatMul", Name: name, check: func(b kernels.Backend) error {
					e := newEnv(b, seed)
					defer e.free()
					off, offOp, rows := e.groupedOperands(s.tokens, s.experts, s.topK)
					a := e.floats("a", adt, e.uniform(rows*s.k, 1), true)
					bm := e.floats("b", bdt, e.uniform(s.experts*s.k*s.n, 1), true)
					c, cIn := e.gmmC(cdt, rows*s.n, s.beta)
					ref := func(av []float64) []float64 {
						return RefGroupedMatMul(cIn, av, bm.values(), off, s.experts, s.n, s.k, s.transB, float64(s.alpha), float64(s.beta))
					}
					b.GroupedMatMul(c.view, a.view, bm.view, offOp.view, rows, s.experts, s.n, s.k, s.transB, s.alpha, s.beta)
					if err := e.checkAll(); err != nil {
						return err
					}
					want := ref(a.values())
					return compareLoRA("c", c.result(b), want, ref(roundedBF16(a.values())), bdt == kernels.BF16, cdt == kernels.BF16)
				}})
			}
		}
	}
	return cs
}

// groupedMatMulMXFP4BF16Cases: GroupedMatMulMXFP4 with a BF16 A or C,
// held to the reference over the decoded weights and, on a backend that
// keeps bf16 weights, to its own GroupedMatMul over them in a BF16 buffer
// with the same A and C dtypes, bit for bit (as groupedMatMulMXFP4Cases).
func groupedMatMulMXFP4BF16Cases() []Case {
	var cs []Case
	for i, s := range []gmmShape{mxfp4Shapes[0], mxfp4Shapes[1], mxfp4Shapes[3], mxfp4Shapes[4]} {
		for j, act := range gmmActs {
			s, adt, cdt, seed := s, act[0], act[1], uint64(5900+10*i+j)
			name := fmt.Sprintf("rows=%d,experts=%d,n=%d,k=%d,tB=%v,A=%s,C=%s,alpha=%g,beta=%g",
				s.tokens*s.topK, s.experts, s.n, s.k, s.transB, dtName(adt), dtName(cdt), s.alpha, s.beta)
			cs = append(cs, Case{Op: "GroupedMatMulMXFP4", Name: name, check: func(b kernels.Backend) error {
				e := newEnv(b, seed)
				defer e.free()
				nw := s.experts * s.n * s.k
				codes, scales := make([]byte, nw/2), make([]byte, nw/32)
				for i := range codes {
					codes[i] = byte(e.rng.Uint64())
				}
				for i := range scales {
					scales[i] = byte(120 + e.rng.IntN(8))
				}
				w, parents := mxfp4Operand(b, codes, scales)
				defer func() {
					for _, p := range parents {
						b.Free(p)
					}
				}()
				vals := RefDequantMXFP4(codes, scales)
				bm := e.floats("b (bf16 twin)", kernels.BF16, f32s(vals), true)
				off, offOp, rows := e.groupedOperands(s.tokens, s.experts, s.topK)
				a := e.floats("a", adt, e.uniform(rows*s.k, 1), true)
				c, cIn := e.gmmC(cdt, rows*s.n, s.beta)
				twin := e.floats("c (bf16 twin)", cdt, c.f[guard:guard+c.n], false)
				b.GroupedMatMulMXFP4(c.view, a.view, w, offOp.view, rows, s.experts, s.n, s.k, s.transB, s.alpha, s.beta)
				b.GroupedMatMul(twin.view, a.view, bm.view, offOp.view, rows, s.experts, s.n, s.k, s.transB, s.alpha, s.beta)
				if err := e.checkAll(); err != nil {
					return err
				}
				got, gotTwin := c.result(b), twin.result(b)
				if b.Describe().BF16Storage == kernels.BF16 {
					if err := sameAsBF16Twin(got, gotTwin); err != nil {
						return err
					}
				}
				ref := func(av []float64) []float64 {
					return RefGroupedMatMul(cIn, av, vals, off, s.experts, s.n, s.k, s.transB, float64(s.alpha), float64(s.beta))
				}
				return compareBF16GEMM("c", got, ref(a.values()), ref(roundedBF16(a.values())), cdt == kernels.BF16)
			}})
		}
	}
	return cs
}

// groupedMatMulTNBF16Cases: the experts' LoRA weight gradients over a
// BF16 dy or x (A or B), C F32; 200 rows over 3 experts leave the last
// with none (C_e = beta·C_e: 0 over NaN with beta 0).
func groupedMatMulTNBF16Cases() []Case {
	shapes := []gmmShape{{9, 4, 2, 13, 5, false, false, 1, 1}, {33, 8, 2, 70, 16, false, false, 2, 0},
		{40, 16, 4, 8, 130, false, false, 0.5, 1}, {100, 3, 2, 8, 72, false, false, 1, 0}}
	var cs []Case
	for i, s := range shapes {
		for j, act := range gmmActs {
			// Here n and k name C_e's m × n: m = s.n, n = s.k.
			s, adt, bdt, seed := s, act[0], act[1], uint64(6000+10*i+j)
			name := fmt.Sprintf("rows=%d,experts=%d,m=%d,n=%d,A=%s,B=%s,alpha=%g,beta=%g",
				s.tokens*s.topK, s.experts, s.n, s.k, dtName(adt), dtName(bdt), s.alpha, s.beta)
			cs = append(cs, Case{Op: "GroupedMatMulTN", Name: name, check: func(b kernels.Backend) error {
				e := newEnv(b, seed)
				defer e.free()
				off, offOp, rows := e.groupedOperands(s.tokens, s.experts, s.topK)
				a := e.floats("a", adt, e.uniform(rows*s.n, 1), true)
				bm := e.floats("b", bdt, e.uniform(rows*s.k, 1), true)
				c, cIn := e.gmmC(kernels.F32, s.experts*s.n*s.k, s.beta)
				want := RefGroupedMatMulTN(cIn, a.values(), bm.values(), off, s.experts, s.n, s.k, float64(s.alpha), float64(s.beta))
				b.GroupedMatMulTN(c.view, a.view, bm.view, offOp.view, rows, s.experts, s.n, s.k, s.alpha, s.beta)
				if err := e.checkAll(); err != nil {
					return err
				}
				return Compare("c", c.result(b), want, tolMatMul)
			}})
		}
	}
	return cs
}
