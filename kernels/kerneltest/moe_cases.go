package kerneltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// The MoE cases: routing (top-k with a planted exact tie, replayed experts,
// with and without renormalisation, up to Qwen3-30B-A3B's 128 experts and
// top-8), grouping (an expert with no tokens, one with most), the grouped
// GEMMs (both layouts of B, bf16 B, beta 0 over NaN and beta 1, an empty
// expert) and combining, each backward also against finite differences of
// the backend's own forward.

func moeCases() []Case {
	var cs []Case
	for _, g := range [][]Case{moeRouteCases(), moeRouteBackwardCases(), sigmoidRouteCases(), sigmoidRouteBackwardCases(), moeGroupCases(),
		groupedMatMulCases(), groupedMatMulSliceCases(), groupedMatMulBF16Cases(), groupedMatMulMXFP4Cases(), groupedMatMulMXFP4BF16Cases(),
		groupedMatMulTNCases(), groupedMatMulTNBF16Cases(), moeCombineCases(), moeCombineBF16Cases(), moeCombineBackwardCases(), moeCombineBackwardBF16Cases(),
		clampedGLUCases()} {
		cs = append(cs, g...)
	}
	return cs
}

func (o *operand) intResult(b kernels.Backend) []int32 {
	got := make([]int32, o.n)
	b.DownloadI32(got, o.view)
	return got
}

func compareInts(name string, got, want []int32) error {
	for i := range want {
		if got[i] != want[i] {
			return fmt.Errorf("%s[%d] = %d, want %d", name, i, got[i], want[i])
		}
	}
	return nil
}

type routeShape struct{ n, experts, topK int }

var routeShapes = []routeShape{{1, 2, 1}, {7, 8, 2}, {33, 16, 4}, {5, 128, 8}}

// routeLogits returns logits whose probabilities are at least ~3% apart
// within a row (so no float32 rounding can reorder them), except that in
// row 0 experts 1 and the last are tied exactly at the top: top-k must take
// the lower index first.
func (e *env) routeLogits(s routeShape) []float32 {
	v := make([]float32, s.n*s.experts)
	for t := range s.n {
		perm := e.rng.Perm(s.experts)
		for i := range s.experts {
			v[t*s.experts+i] = float32(0.05*float64(perm[i]) + 0.02*e.rng.Float64() - 0.5)
		}
	}
	if s.experts > 2 {
		v[s.experts-1] = 1
		v[1] = 1
	}
	return v
}

// routeExperts returns experts drawn at random (distinct per token), the
// replayed input: not the top-k, so a backend that ignores replay fails.
func (e *env) routeExperts(s routeShape) []int32 {
	out := make([]int32, s.n*s.topK)
	for t := range s.n {
		perm := e.rng.Perm(s.experts)
		for j := range s.topK {
			out[t*s.topK+j] = int32(perm[j])
		}
	}
	return out
}

func moeRouteCases() []Case {
	var cs []Case
	for i, s := range routeShapes {
		for _, norm := range []bool{false, true} {
			for _, replay := range []bool{false, true} {
				s, norm, replay, seed := s, norm, replay, uint64(5100+10*i)
				name := fmt.Sprintf("n=%d,experts=%d,k=%d,norm=%v,replay=%v", s.n, s.experts, s.topK, norm, replay)
				cs = append(cs, Case{Op: "MoERoute", Name: name, check: func(b kernels.Backend) error {
					e := newEnv(b, seed)
					defer e.free()
					logits := e.in("logits", e.routeLogits(s))
					w := e.out("weights", nans(s.n*s.topK))
					var ex *operand
					var rep []int32
					if replay {
						rep = e.routeExperts(s)
						ex = e.ints("experts", rep)
					} else {
						ex = e.intsOut("experts", s.n*s.topK)
					}
					wantE, wantW := RefMoERoute(logits.values(), rep, s.n, s.experts, s.topK, norm)
					b.MoERoute(w.view, ex.view, logits.view, s.n, s.experts, s.topK, norm, replay)
					if err := e.checkAll(); err != nil {
						return err
					}
					if err := compareInts("experts", ex.intResult(b), wantE); err != nil {
						return err
					}
					return Compare("weights", w.result(b), wantW, tolReduction)
				}})
			}
		}
	}
	return cs
}

func moeRouteBackwardCases() []Case {
	var cs []Case
	for i, s := range routeShapes {
		for _, norm := range []bool{false, true} {
			for _, withP := range []bool{false, true} {
				s, norm, withP, seed := s, norm, withP, uint64(5200+10*i)
				name := fmt.Sprintf("n=%d,experts=%d,k=%d,norm=%v,dprobs=%v", s.n, s.experts, s.topK, norm, withP)
				run := func(b kernels.Backend, fd bool) error {
					e := newEnv(b, seed)
					defer e.free()
					logits := e.in("logits", e.routeLogits(s))
					exps := e.routeExperts(s)
					ex := e.ints("experts", exps)
					dw := e.in("dweights", e.uniform(s.n*s.topK, 1))
					var dp kernels.Buffer
					var dpv []float64
					if withP {
						o := e.in("dprobs", e.uniform(s.experts, 1))
						dp, dpv = o.view, o.values()
					}
					dl := e.out("dlogits", nans(s.n*s.experts))
					b.MoERouteBackward(dl.view, dw.view, dp, logits.view, ex.view, s.n, s.experts, s.topK, norm)
					if err := e.checkAll(); err != nil {
						return err
					}
					got := dl.result(b)
					if !fd {
						want := RefMoERouteBackward(dw.values(), dpv, logits.values(), exps, s.n, s.experts, s.topK, norm)
						return Compare("dlogits", got, want, tolReduction)
					}
					// Finite differences of L = Σ r·weights (MoERoute's
					// replay): the routing weights' path. dprobs goes
					// through the same softmax Jacobian and is held to the
					// reference's full Jacobian product only.
					w := e.out("weights", nans(s.n*s.topK))
					r := dw.result(b)
					return checkFD(e, 1e-2, []fdInput{{op: logits, x: logits.result(b), grad: got}}, func() (float64, float64, error) {
						b.MoERoute(w.view, ex.view, logits.view, s.n, s.experts, s.topK, norm, true)
						if err := b.Sync(); err != nil {
							return 0, 0, err
						}
						l, labs := dotLoss(r, w.result(b))
						return l, labs, nil
					})
				}
				cs = append(cs, Case{Op: "MoERouteBackward", Name: name, check: func(b kernels.Backend) error { return run(b, false) }})
				if !withP {
					cs = append(cs, Case{Op: "MoERouteBackward", Name: "fd," + name, check: func(b kernels.Backend) error { return run(b, true) }})
				}
			}
		}
	}
	return cs
}

// skewedExperts assigns n tokens topK distinct experts each, favouring
// expert 0 and never choosing expert nExperts−1 (when there are more
// experts than topK): the grouping's lopsided and empty cases.
func (e *env) skewedExperts(n, nExperts, topK int) []int32 {
	out := make([]int32, n*topK)
	usable := nExperts
	if nExperts > topK {
		usable--
	}
	for t := range n {
		perm := e.rng.Perm(usable)
		if e.rng.IntN(2) == 0 {
			for j := range perm {
				if perm[j] == 0 {
					perm[0], perm[j] = perm[j], perm[0]
				}
			}
		}
		for j := range topK {
			out[t*topK+j] = int32(perm[j])
		}
	}
	return out
}

func moeGroupCases() []Case {
	shapes := []routeShape{{1, 1, 1}, {1, 4, 2}, {9, 4, 2}, {100, 16, 4}, {64, 128, 8}}
	var cs []Case
	for i, s := range shapes {
		s, seed := s, uint64(5300+i)
		cs = append(cs, Case{Op: "MoEGroup", Name: fmt.Sprintf("n=%d,experts=%d,k=%d", s.n, s.experts, s.topK), check: func(b kernels.Backend) error {
			e := newEnv(b, seed)
			defer e.free()
			exps := e.skewedExperts(s.n, s.experts, s.topK)
			ex := e.ints("experts", exps)
			off := e.intsOut("offsets", s.experts+1)
			tok := e.intsOut("tokens", s.n*s.topK)
			rows := e.intsOut("rows", s.n*s.topK)
			b.MoEGroup(off.view, tok.view, rows.view, ex.view, s.n, s.experts, s.topK)
			if err := e.checkAll(); err != nil {
				return err
			}
			wo, wt, wr := RefMoEGroup(exps, s.n, s.experts, s.topK)
			if err := compareInts("offsets", off.intResult(b), wo); err != nil {
				return err
			}
			if err := compareInts("tokens", tok.intResult(b), wt); err != nil {
				return err
			}
			return compareInts("rows", rows.intResult(b), wr)
		}})
	}
	return cs
}

type gmmShape struct {
	tokens, experts, topK, n, k int
	transB, bf16                bool
	alpha, beta                 float32
}

var gmmShapes = []gmmShape{
	{1, 1, 1, 1, 1, false, false, 1, 0},
	{9, 4, 2, 13, 17, true, false, 1, 0},
	{9, 4, 2, 13, 17, false, false, 0.5, 1},
	{9, 4, 2, 13, 17, true, true, 1, 0},
	{33, 8, 2, 70, 65, true, true, 2, 1},
	{40, 16, 4, 33, 130, false, true, 1, 0},
	// Experts with more than one 64-row tile and ragged tails, n and k not
	// multiples of the tensor-core kernel's 64 × 64 × 32 tiles (the tiny
	// models' expert sizes are not), both layouts.
	{100, 3, 2, 72, 88, true, true, 1, 0},
	{100, 3, 2, 88, 72, false, true, 0.5, 1},
}

// groupedOperands draws a skewed assignment and returns its offsets
// (host and guarded device copies) and row count.
func (e *env) groupedOperands(tokens, experts, topK int) ([]int32, *operand, int) {
	off, _, _ := RefMoEGroup(e.skewedExperts(tokens, experts, topK), tokens, experts, topK)
	return off, e.ints("offsets", off), tokens * topK
}

func groupedMatMulCases() []Case {
	var cs []Case
	for i, s := range gmmShapes {
		s, seed := s, uint64(5400+i)
		name := fmt.Sprintf("rows=%d,experts=%d,n=%d,k=%d,tB=%v,bf16=%v,alpha=%g,beta=%g", s.tokens*s.topK, s.experts, s.n, s.k, s.transB, s.bf16, s.alpha, s.beta)
		cs = append(cs, Case{Op: "GroupedMatMul", Name: name, check: func(b kernels.Backend) error {
			e := newEnv(b, seed)
			defer e.free()
			off, offOp, rows := e.groupedOperands(s.tokens, s.experts, s.topK)
			a := e.in("a", e.uniform(rows*s.k, 1))
			dt := kernels.F32
			if s.bf16 {
				dt = kernels.BF16
			}
			bm := e.floats("b", dt, e.uniform(s.experts*s.k*s.n, 1), true)
			c0 := nans(rows * s.n)
			if s.beta != 0 {
				c0 = e.uniform(rows*s.n, 1)
			}
			c := e.out("c", c0)
			cIn := c.values()
			if s.beta == 0 {
				cIn = make([]float64, rows*s.n)
			}
			want := RefGroupedMatMul(cIn, a.values(), bm.values(), off, s.experts, s.n, s.k, s.transB, float64(s.alpha), float64(s.beta))
			b.GroupedMatMul(c.view, a.view, bm.view, offOp.view, rows, s.experts, s.n, s.k, s.transB, s.alpha, s.beta)
			if err := e.checkAll(); err != nil {
				return err
			}
			got := c.result(b)
			errF32 := Compare("c", got, want, tolMatMul)
			if !s.bf16 || errF32 == nil {
				return errF32
			}
			// With bf16 experts a backend may round A to bf16 and multiply
			// on tensor cores (kernels/cuda: grouped_matmul_tc.cu), held
			// then to the reference over the rounded A, as MatMul is.
			ar := a.values()
			for i, v := range ar {
				ar[i] = float64(RoundBF16(float32(v)))
			}
			wantBF16 := RefGroupedMatMul(cIn, ar, bm.values(), off, s.experts, s.n, s.k, s.transB, float64(s.alpha), float64(s.beta))
			if err := Compare("c", got, wantBF16, tolMatMulBF16); err != nil {
				return fmt.Errorf("%v (A in f32); %v (A rounded to bf16)", errF32, err)
			}
			return nil
		}})
	}
	return cs
}

// groupedMatMulSliceCases run the GEMM over a run of the experts of a
// grouping over more: offsets a slice of the grouping's (not from 0), B
// those experts' matrices, rows the grouping's — as an expert-parallel
// rank runs its own experts over rows gathered from every rank
// (model/decode_ep.go). The experts' rows are computed, every other row
// of C is left as it was.
func groupedMatMulSliceCases() []Case {
	var cs []Case
	for i, s := range []struct {
		first, count int
		bf16         bool
	}{{3, 3, false}, {0, 2, true}, {6, 2, true}, {2, 1, false}} {
		const tokens, experts, topK, n, k = 40, 8, 2, 33, 20
		seed := uint64(5480 + i)
		name := fmt.Sprintf("experts[%d,%d) of %d,bf16=%v", s.first, s.first+s.count, experts, s.bf16)
		cs = append(cs, Case{Op: "GroupedMatMul", Name: name, check: func(b kernels.Backend) error {
			e := newEnv(b, seed)
			defer e.free()
			off, offOp, rows := e.groupedOperands(tokens, experts, topK)
			sub := off[s.first : s.first+s.count+1]
			a := e.in("a", e.uniform(rows*k, 1))
			dt := kernels.F32
			if s.bf16 {
				dt = kernels.BF16
			}
			bm := e.floats("b", dt, e.uniform(s.count*k*n, 1), true)
			c := e.out("c", e.uniform(rows*n, 1))
			cIn := c.values()
			b.GroupedMatMul(c.view, a.view, bm.view, offOp.view.Slice(s.first, s.count+1), rows, s.count, n, k, true, 1, 0)
			if err := e.checkAll(); err != nil {
				return err
			}
			got := c.result(b)
			ar := a.values()
			if s.bf16 && Compare("c", got, RefGroupedMatMul(cIn, ar, bm.values(), sub, s.count, n, k, true, 1, 0), tolMatMul) != nil {
				for i, v := range ar {
					ar[i] = float64(RoundBF16(float32(v))) // tensor cores round A
				}
				return Compare("c", got, RefGroupedMatMul(cIn, ar, bm.values(), sub, s.count, n, k, true, 1, 0), tolMatMulBF16)
			}
			return Compare("c", got, RefGroupedMatMul(cIn, ar, bm.values(), sub, s.count, n, k, true, 1, 0), tolMatMul)
		}})
	}
	return cs
}

func groupedMatMulTNCases() []Case {
	shapes := []gmmShape{{1, 1, 1, 1, 1, false, false, 1, 0}, {9, 4, 2, 13, 5, false, false, 1, 1},
		{33, 8, 2, 70, 16, false, false, 2, 0}, {40, 16, 4, 8, 130, false, false, 0.5, 1}}
	var cs []Case
	for i, s := range shapes {
		// Here n and k name C_e's m × n: m = s.n, n = s.k.
		s, seed := s, uint64(5500+i)
		name := fmt.Sprintf("rows=%d,experts=%d,m=%d,n=%d,alpha=%g,beta=%g", s.tokens*s.topK, s.experts, s.n, s.k, s.alpha, s.beta)
		cs = append(cs, Case{Op: "GroupedMatMulTN", Name: name, check: func(b kernels.Backend) error {
			e := newEnv(b, seed)
			defer e.free()
			off, offOp, rows := e.groupedOperands(s.tokens, s.experts, s.topK)
			a := e.in("a", e.uniform(rows*s.n, 1))
			bm := e.in("b", e.uniform(rows*s.k, 1))
			size := s.experts * s.n * s.k
			c0 := nans(size)
			if s.beta != 0 {
				c0 = e.uniform(size, 1)
			}
			c := e.out("c", c0)
			cIn := c.values()
			if s.beta == 0 {
				cIn = make([]float64, size)
			}
			want := RefGroupedMatMulTN(cIn, a.values(), bm.values(), off, s.experts, s.n, s.k, float64(s.alpha), float64(s.beta))
			b.GroupedMatMulTN(c.view, a.view, bm.view, offOp.view, rows, s.experts, s.n, s.k, s.alpha, s.beta)
			if err := e.checkAll(); err != nil {
				return err
			}
			return Compare("c", c.result(b), want, tolMatMul)
		}})
	}
	return cs
}

var combineShapes = []struct{ n, experts, topK, cols int }{{1, 1, 1, 1}, {7, 4, 2, 33}, {20, 16, 8, 300}}

// combineRows is the rows operand of a real grouping.
func (e *env) combineRows(n, experts, topK int) []int32 {
	_, _, rows := RefMoEGroup(e.skewedExperts(n, experts, topK), n, experts, topK)
	return rows
}

func moeCombineCases() []Case {
	var cs []Case
	for i, s := range combineShapes {
		for _, unit := range []bool{false, true} {
			s, unit, seed := s, unit, uint64(5600+i)
			cs = append(cs, Case{Op: "MoECombine", Name: fmt.Sprintf("n=%d,k=%d,cols=%d,unit=%v", s.n, s.topK, s.cols, unit), check: func(b kernels.Backend) error {
				e := newEnv(b, seed)
				defer e.free()
				rowsH := e.combineRows(s.n, s.experts, s.topK)
				rows := e.ints("rows", rowsH)
				x := e.in("x", e.uniform(s.n*s.topK*s.cols, 1))
				var w kernels.Buffer
				var wv []float64
				if !unit {
					wo := e.in("weights", e.uniform(s.n*s.topK, 1))
					w, wv = wo.view, wo.values()
				}
				out := e.out("out", nans(s.n*s.cols))
				want := RefMoECombine(x.values(), wv, rowsH, s.n, s.topK, s.cols)
				b.MoECombine(out.view, x.view, w, rows.view, s.n, s.topK, s.cols)
				if err := e.checkAll(); err != nil {
					return err
				}
				return Compare("out", out.result(b), want, tolReduction)
			}})
		}
	}
	return cs
}

func moeCombineBackwardCases() []Case {
	var cs []Case
	for i, s := range combineShapes {
		s, seed := s, uint64(5700+i)
		name := fmt.Sprintf("n=%d,k=%d,cols=%d", s.n, s.topK, s.cols)
		run := func(b kernels.Backend, fd bool) error {
			e := newEnv(b, seed)
			defer e.free()
			rowsH := e.combineRows(s.n, s.experts, s.topK)
			rows := e.ints("rows", rowsH)
			x := e.in("x", e.uniform(s.n*s.topK*s.cols, 1))
			w := e.in("weights", e.uniform(s.n*s.topK, 1))
			dout := e.in("dout", e.uniform(s.n*s.cols, 1))
			dx := e.out("dx", nans(s.n*s.topK*s.cols))
			dw := e.out("dweights", nans(s.n*s.topK))
			b.MoECombineBackward(dx.view, dw.view, dout.view, x.view, w.view, rows.view, s.n, s.topK, s.cols)
			if err := e.checkAll(); err != nil {
				return err
			}
			gx, gw := dx.result(b), dw.result(b)
			if !fd {
				wx, ww := RefMoECombineBackward(dout.values(), x.values(), w.values(), rowsH, s.n, s.topK, s.cols)
				if err := Compare("dx", gx, wx, tolRounded); err != nil {
					return err
				}
				return Compare("dweights", gw, ww, tolReduction)
			}
			out := e.out("out", nans(s.n*s.cols))
			r := dout.result(b)
			return checkFD(e, 1e-2, []fdInput{{op: x, x: x.result(b), grad: gx}, {op: w, x: w.result(b), grad: gw}}, func() (float64, float64, error) {
				b.MoECombine(out.view, x.view, w.view, rows.view, s.n, s.topK, s.cols)
				if err := b.Sync(); err != nil {
					return 0, 0, err
				}
				l, labs := dotLoss(r, out.result(b))
				return l, labs, nil
			})
		}
		cs = append(cs,
			Case{Op: "MoECombineBackward", Name: name, check: func(b kernels.Backend) error { return run(b, false) }},
			Case{Op: "MoECombineBackward", Name: "fd," + name, check: func(b kernels.Backend) error { return run(b, true) }})
	}
	return cs
}
