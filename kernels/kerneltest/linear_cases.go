package kerneltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// The LinearOps cases: the causal convolution and the gated delta rule
// over run layouts that cover run lengths around the chunk of 64 (1, 63,
// 64, 65, 200), several runs in one call in an order that is not the
// token order, fresh runs (init −1) and runs from a slot, runs sharing an
// init slot, a run updating its own slot, runs writing no final state,
// and decode-shaped calls (many runs of one token); grouped (nHeadV =
// 2·nHeadK) and equal heads with dimK ≠ dimV; each backward against the
// reference and finite differences of the backend's own forward, with
// the state gradients flowing in at final slots and out at init slots.

// tolDelta bounds GatedDeltaRule and its backward: f32 recurrences of up
// to 200 steps, each a few dot products of dimK or dimV terms. The CPU
// backend lands at NMSE ≤ 6e-14, max-abs ≤ 4e-7 of scale (dqkv, dbeta);
// the other LinearOps within 4e-15 / 1e-7 of theirs. A dropped term
// or a wrong decay is off by NMSE ≳ 1e-4.
var tolDelta = Tol{NMSE: 1e-10, MaxAbs: 1e-5}

// linearLayout is the runs of one call.
type linearLayout struct {
	name        string
	runs        []LinearRun
	nTok, slots int
}

// inits and finals are the slots the layout reads and writes.
func (l linearLayout) inits() map[int]bool {
	m := map[int]bool{}
	for _, r := range l.runs {
		if r.Init >= 0 {
			m[r.Init] = true
		}
	}
	return m
}

func (l linearLayout) finals() map[int]bool {
	m := map[int]bool{}
	for _, r := range l.runs {
		if r.Final >= 0 {
			m[r.Final] = true
		}
	}
	return m
}

// linearLayouts are the forward layouts; backward ones (differentiable:
// no run writes its own init slot) are those with backward set.
func linearLayouts(backward bool) []linearLayout {
	var ls []linearLayout
	for _, n := range []int{1, 63, 64, 65, 200} {
		ls = append(ls, linearLayout{fmt.Sprintf("fresh,n=%d", n), []LinearRun{{0, n, -1, 0}}, n, 1})
		ls = append(ls, linearLayout{fmt.Sprintf("slot0→1,n=%d", n), []LinearRun{{0, n, 0, 1}}, n, 2})
	}
	// Runs out of token order: a fresh one into slot 1, two sharing init
	// slot 0 (one of a single token), one into no slot, and one updating
	// slot 3 in place (forward) or into slot 4 (backward).
	last := LinearRun{65, 3, 3, 3}
	if backward {
		last.Final = 4
	}
	ls = append(ls, linearLayout{"mixed", []LinearRun{{75, 65, -1, 1}, {0, 1, 0, 2}, {1, 64, 0, -1}, last, {68, 7, -1, -1}}, 140, 5})
	// Decode: 8 sequences of one token each, in and out of their own slot
	// (forward); in the backward from 4 shared slots into 8 others.
	dec := make([]LinearRun, 8)
	for i := range dec {
		dec[i] = LinearRun{7 - i, 1, i, i}
		if backward {
			dec[i] = LinearRun{7 - i, 1, i % 4, 4 + i}
		}
	}
	ls = append(ls, linearLayout{"decode,8×1", dec, 8, 12})
	return ls
}

// frozenOutside returns a frozen predicate for a slots × per state
// operand: elements outside the init slots are not inputs of the forward.
func frozenOutside(inits map[int]bool, per int) func(int) bool {
	return func(i int) bool { return !inits[i/per] }
}

// zeroOutside zeroes the elements of v (slots × per) outside keep.
func zeroOutside(v []float32, keep map[int]bool, per int) []float32 {
	out := append([]float32(nil), v...)
	for i := range out {
		if !keep[i/per] {
			out[i] = 0
		}
	}
	return out
}

// convBiasOperand is the conv1d bias of a case (Mamba-2's, in ±1) and
// the reference's view of it, or nil and nil for none.
func convBiasOperand(e *env, dt kernels.DType, channels int, bias bool) (kernels.Buffer, []float64) {
	if !bias {
		return nil, nil
	}
	o := e.floats("bias", dt, e.uniform(channels, 1), true)
	return o.view, o.values()
}

func causalConv1DCases() []Case {
	var cs []Case
	for i, l := range linearLayouts(false) {
		for _, k := range []struct {
			channels, kernel int
			w                kernels.DType
			bias             bool
		}{{37, 4, kernels.F32, false}, {20, 3, kernels.BF16, false}, {33, 4, kernels.F32, true}, {21, 4, kernels.BF16, true}} {
			l, k, seed := l, k, uint64(6000+i)
			name := fmt.Sprintf("%s,ch=%d,kernel=%d,w=%v", l.name, k.channels, k.kernel, k.w)
			if k.bias {
				name += ",bias"
			}
			cs = append(cs, Case{Op: "CausalConv1D", Name: name, check: func(b kernels.Backend) error {
				e := newEnv(b, seed)
				defer e.free()
				x := e.in("x", e.uniform(l.nTok*k.channels, 2))
				w := e.floats("w", k.w, e.uniform(k.channels*k.kernel, 1), true)
				bias, biasRef := convBiasOperand(e, k.w, k.channels, k.bias)
				st := e.out("convState", e.uniform(l.slots*(k.kernel-1)*k.channels, 2))
				runs := e.ints("runs", flattenRuns(l.runs))
				out := e.out("out", nans(l.nTok*k.channels))
				wantSt := st.values()
				want := RefCausalConv1D(x.values(), w.values(), biasRef, wantSt, l.runs, l.nTok, k.channels, k.kernel)
				b.CausalConv1D(out.view, x.view, w.view, bias, st.view, runs.view, len(l.runs), l.nTok, k.channels, k.kernel)
				if err := e.checkAll(); err != nil {
					return err
				}
				if err := Compare("out", out.result(b), want, tolElementwise); err != nil {
					return err
				}
				return Compare("convState", st.result(b), wantSt, tolExact)
			}})
		}
	}
	return cs
}

func causalConv1DBackwardCases() []Case {
	var cs []Case
	for i, l := range linearLayouts(true) {
		const channels, kernel = 29, 4
		l, seed, withBias := l, uint64(6100+i), i%2 == 1 // Mamba-2's bias on every other layout
		per := (kernel - 1) * channels
		run := func(b kernels.Backend, fd bool) error {
			e := newEnv(b, seed)
			defer e.free()
			x := e.in("x", e.uniform(l.nTok*channels, 2))
			w := e.in("w", e.uniform(channels*kernel, 1))
			bias, biasRef := convBiasOperand(e, kernels.F32, channels, withBias)
			st := e.in("convState", e.uniform(l.slots*per, 2))
			runs := e.ints("runs", flattenRuns(l.runs))
			dout := e.in("dout", e.uniform(l.nTok*channels, 1))
			// Gradient in at the final slots, something to add to at the
			// init slots.
			d0 := e.uniform(l.slots*per, 1)
			dst := e.out("dConvState", d0)
			dx := e.out("dx", nans(l.nTok*channels))
			wantD := dst.values()
			want := RefCausalConv1DBackward(wantD, dout.values(), x.values(), w.values(), biasRef, st.values(), l.runs, l.nTok, channels, kernel)
			b.CausalConv1DBackward(dx.view, dst.view, dout.view, x.view, w.view, bias, st.view, runs.view, len(l.runs), l.nTok, channels, kernel)
			if err := e.checkAll(); err != nil {
				return err
			}
			gotDx, gotD := dx.result(b), dst.result(b)
			if !fd {
				if err := Compare("dx", gotDx, want, tolElementwise); err != nil {
					return err
				}
				return Compare("dConvState", gotD, wantD, tolElementwise)
			}
			// L = dout·out + dFinal·(final states), dFinal = d0 at final slots.
			dFinal := zeroOutside(d0, l.finals(), per)
			dInit := make([]float32, len(gotD))
			for j := range gotD {
				dInit[j] = gotD[j] - d0[j]
			}
			out := e.out("out", nans(l.nTok*channels))
			sc := e.out("convState after", nans(l.slots*per))
			stv := st.result(b)
			return checkFD(e, 1e-2, []fdInput{
				{op: x, x: x.result(b), grad: gotDx},
				{op: st, x: stv, grad: dInit, frozen: frozenOutside(l.inits(), per)},
			}, func() (float64, float64, error) {
				b.Copy(sc.view, st.view)
				b.CausalConv1D(out.view, x.view, w.view, bias, sc.view, runs.view, len(l.runs), l.nTok, channels, kernel)
				if err := b.Sync(); err != nil {
					return 0, 0, err
				}
				l1, a1 := dotLoss(dout.result(b), out.result(b))
				l2, a2 := dotLoss(dFinal, sc.result(b))
				return l1 + l2, a1 + a2, nil
			})
		}
		name := l.name
		if withBias {
			name += ",bias"
		}
		cs = append(cs, Case{Op: "CausalConv1DBackward", Name: name, check: func(b kernels.Backend) error { return run(b, false) }})
		cs = append(cs, Case{Op: "CausalConv1DBackward", Name: "fd," + name, check: func(b kernels.Backend) error { return run(b, true) }})
	}
	return cs
}

// deltaShapes: grouped heads with dimK ≠ dimV, and equal heads.
var deltaShapes = []DeltaShape{{2, 4, 16, 24}, {2, 2, 20, 12}}

// deltaOperands draws a call's inputs: q, k, v in ±1 (token 0's q and k
// heads scaled by 1e-3 and 30, the l2 norm's range; finite differences
// leave them alone, as a step of 1e-2 is no small change of a q of
// 1e-3), g in [−2, 0),
// beta in (0.05, 0.95), states in ±0.5.
// The state is an input (a backward's) or an output (the forward's).
func (e *env) deltaOperands(l linearLayout, s DeltaShape, stateIn bool) (qkv, g, beta, st *operand) {
	qv := e.uniform(l.nTok*s.width(), 1)
	for i := 0; i < 2*s.NHeadK*s.DimK; i++ {
		qv[i] *= 1e-3
		if i >= s.NHeadK*s.DimK {
			qv[i] *= 3e4
		}
	}
	gv, bv := e.uniform(l.nTok*s.NHeadV, 1), e.uniform(l.nTok*s.NHeadV, 1)
	for i := range gv {
		gv[i] = -(gv[i] + 1.02)
		bv[i] = 0.5 + 0.45*bv[i]
	}
	return e.in("qkv", qv), e.in("g", gv), e.in("beta", bv),
		e.floats("state", kernels.F32, e.uniform(l.slots*s.NHeadV*s.DimK*s.DimV, 0.5), stateIn)
}

func deltaName(l linearLayout, s DeltaShape) string {
	return fmt.Sprintf("%s,heads=%d/%d,dimK=%d,dimV=%d", l.name, s.NHeadK, s.NHeadV, s.DimK, s.DimV)
}

func gatedDeltaRuleCases() []Case {
	var cs []Case
	layouts := linearLayouts(false)
	// One model-sized head pair (dimK = dimV = 128, Qwen3.5's), past a chunk.
	big := []linearLayout{{"slot0→1,n=70", []LinearRun{{0, 70, 0, 1}}, 70, 2}, layouts[len(layouts)-1]}
	type job struct {
		l linearLayout
		s DeltaShape
	}
	var jobs []job
	for _, l := range layouts {
		for _, s := range deltaShapes {
			jobs = append(jobs, job{l, s})
		}
	}
	for _, l := range big {
		jobs = append(jobs, job{l, DeltaShape{1, 2, 128, 128}})
	}
	for i, j := range jobs {
		l, s, seed := j.l, j.s, uint64(6200+i)
		cs = append(cs, Case{Op: "GatedDeltaRule", Name: deltaName(l, s), check: func(b kernels.Backend) error {
			e := newEnv(b, seed)
			defer e.free()
			qkv, g, beta, st := e.deltaOperands(l, s, false)
			runs := e.ints("runs", flattenRuns(l.runs))
			out := e.out("out", nans(l.nTok*s.NHeadV*s.DimV))
			wantSt := st.values()
			want := RefGatedDeltaRule(qkv.values(), g.values(), beta.values(), wantSt, l.runs, l.nTok, s)
			b.GatedDeltaRule(out.view, qkv.view, g.view, beta.view, st.view, runs.view, len(l.runs), l.nTok, s.NHeadK, s.NHeadV, s.DimK, s.DimV)
			if err := e.checkAll(); err != nil {
				return err
			}
			if err := Compare("out", out.result(b), want, tolDelta); err != nil {
				return err
			}
			return Compare("state", st.result(b), wantSt, tolDelta)
		}})
	}
	return cs
}

func gatedDeltaRuleBackwardCases() []Case {
	var cs []Case
	type job struct {
		l linearLayout
		s DeltaShape
	}
	var jobs []job
	for _, l := range linearLayouts(true) {
		for _, s := range deltaShapes {
			jobs = append(jobs, job{l, s})
		}
	}
	// Model-sized heads (dimK = dimV = 128) past a chunk, from a slot.
	jobs = append(jobs, job{linearLayout{"slot0→1,n=70", []LinearRun{{0, 70, 0, 1}}, 70, 2}, DeltaShape{1, 2, 128, 128}})
	for i, j := range jobs {
		l, s, seed := j.l, j.s, uint64(6300+i)
		hs := s.NHeadV * s.DimK * s.DimV
		run := func(b kernels.Backend, fd bool) error {
			e := newEnv(b, seed)
			defer e.free()
			qkv, g, beta, st := e.deltaOperands(l, s, true)
			runs := e.ints("runs", flattenRuns(l.runs))
			dout := e.in("dout", e.uniform(l.nTok*s.NHeadV*s.DimV, 1))
			d0 := e.uniform(l.slots*hs, 1)
			dst := e.out("dState", d0)
			dqkv := e.out("dqkv", nans(l.nTok*s.width()))
			dg := e.out("dg", nans(l.nTok*s.NHeadV))
			dbeta := e.out("dbeta", nans(l.nTok*s.NHeadV))
			wantD := dst.values()
			wq, wg, wb := RefGatedDeltaRuleBackward(wantD, dout.values(), qkv.values(), g.values(), beta.values(), st.values(), l.runs, l.nTok, s)
			b.GatedDeltaRuleBackward(dqkv.view, dg.view, dbeta.view, dst.view, dout.view, qkv.view, g.view, beta.view, st.view, runs.view,
				len(l.runs), l.nTok, s.NHeadK, s.NHeadV, s.DimK, s.DimV)
			if err := e.checkAll(); err != nil {
				return err
			}
			gq, gg, gb, gd := dqkv.result(b), dg.result(b), dbeta.result(b), dst.result(b)
			if !fd {
				for _, c := range []struct {
					what string
					got  []float32
					want []float64
				}{{"dqkv", gq, wq}, {"dg", gg, wg}, {"dbeta", gb, wb}, {"dState", gd, wantD}} {
					if err := Compare(c.what, c.got, c.want, tolDelta); err != nil {
						return err
					}
				}
				return nil
			}
			dFinal := zeroOutside(d0, l.finals(), hs)
			dInit := make([]float32, len(gd))
			for j := range gd {
				dInit[j] = gd[j] - d0[j]
			}
			out := e.out("out", nans(l.nTok*s.NHeadV*s.DimV))
			sc := e.out("state after", nans(l.slots*hs))
			r := dout.result(b)
			return checkFD(e, 1e-2, []fdInput{
				{op: qkv, x: qkv.result(b), grad: gq, frozen: func(i int) bool { return i < 2*s.NHeadK*s.DimK }},
				{op: g, x: g.result(b), grad: gg},
				{op: beta, x: beta.result(b), grad: gb},
				{op: st, x: st.result(b), grad: dInit, frozen: frozenOutside(l.inits(), hs)},
			}, func() (float64, float64, error) {
				b.Copy(sc.view, st.view)
				b.GatedDeltaRule(out.view, qkv.view, g.view, beta.view, sc.view, runs.view, len(l.runs), l.nTok, s.NHeadK, s.NHeadV, s.DimK, s.DimV)
				if err := b.Sync(); err != nil {
					return 0, 0, err
				}
				l1, a1 := dotLoss(r, out.result(b))
				l2, a2 := dotLoss(dFinal, sc.result(b))
				return l1 + l2, a1 + a2, nil
			})
		}
		name := deltaName(l, s)
		cs = append(cs, Case{Op: "GatedDeltaRuleBackward", Name: name, check: func(b kernels.Backend) error { return run(b, false) }})
		if l.nTok <= 65 && s.DimK < 128 {
			cs = append(cs, Case{Op: "GatedDeltaRuleBackward", Name: "fd," + name, check: func(b kernels.Backend) error { return run(b, true) }})
		}
	}
	return cs
}

func deltaGatesCases() []Case {
	var cs, bs []Case
	for i, s := range []struct {
		rows, heads int
		w           kernels.DType
	}{{1, 1, kernels.F32}, {7, 32, kernels.F32}, {33, 16, kernels.BF16}} {
		s, seed := s, uint64(6400+i)
		name := fmt.Sprintf("rows=%d,heads=%d,w=%v", s.rows, s.heads, s.w)
		operands := func(e *env) (a, bb, aLog, dt *operand) {
			av := e.uniform(s.rows*s.heads, 8)
			av[0] = 30 // softplus's linear branch (x > 20)
			return e.in("a", av), e.in("b", e.uniform(s.rows*s.heads, 6)),
				e.floats("aLog", s.w, e.uniform(s.heads, 2), true), e.floats("dtBias", s.w, e.uniform(s.heads, 1), true)
		}
		cs = append(cs, Case{Op: "DeltaGates", Name: name, check: func(b kernels.Backend) error {
			e := newEnv(b, seed)
			defer e.free()
			a, bb, aLog, dt := operands(e)
			g, beta := e.out("g", nans(s.rows*s.heads)), e.out("beta", nans(s.rows*s.heads))
			wg, wb := RefDeltaGates(a.values(), bb.values(), aLog.values(), dt.values(), s.rows, s.heads)
			b.DeltaGates(g.view, beta.view, a.view, bb.view, aLog.view, dt.view, s.rows, s.heads)
			if err := e.checkAll(); err != nil {
				return err
			}
			if err := Compare("g", g.result(b), wg, tolElementwise); err != nil {
				return err
			}
			return Compare("beta", beta.result(b), wb, tolElementwise)
		}})
		run := func(b kernels.Backend, fd bool) error {
			e := newEnv(b, seed)
			defer e.free()
			a, bb, aLog, dt := operands(e)
			dg, dbeta := e.in("dg", e.uniform(s.rows*s.heads, 1)), e.in("dbeta", e.uniform(s.rows*s.heads, 1))
			da, db := e.out("da", nans(s.rows*s.heads)), e.out("db", nans(s.rows*s.heads))
			wa, wb := RefDeltaGatesBackward(dg.values(), dbeta.values(), a.values(), bb.values(), aLog.values(), dt.values(), s.rows, s.heads)
			b.DeltaGatesBackward(da.view, db.view, dg.view, dbeta.view, a.view, bb.view, aLog.view, dt.view, s.rows, s.heads)
			if err := e.checkAll(); err != nil {
				return err
			}
			gotA, gotB := da.result(b), db.result(b)
			if !fd {
				if err := Compare("da", gotA, wa, tolElementwise); err != nil {
					return err
				}
				return Compare("db", gotB, wb, tolElementwise)
			}
			g, beta := e.out("g", nans(s.rows*s.heads)), e.out("beta", nans(s.rows*s.heads))
			rg, rb := dg.result(b), dbeta.result(b)
			return checkFD(e, 1e-2, []fdInput{{op: a, x: a.result(b), grad: gotA}, {op: bb, x: bb.result(b), grad: gotB}}, func() (float64, float64, error) {
				b.DeltaGates(g.view, beta.view, a.view, bb.view, aLog.view, dt.view, s.rows, s.heads)
				if err := b.Sync(); err != nil {
					return 0, 0, err
				}
				l1, a1 := dotLoss(rg, g.result(b))
				l2, a2 := dotLoss(rb, beta.result(b))
				return l1 + l2, a1 + a2, nil
			})
		}
		bs = append(bs, Case{Op: "DeltaGatesBackward", Name: name, check: func(b kernels.Backend) error { return run(b, false) }})
		bs = append(bs, Case{Op: "DeltaGatesBackward", Name: "fd," + name, check: func(b kernels.Backend) error { return run(b, true) }})
	}
	return append(cs, bs...)
}

// gatedRMSNormCases: GatedRMSNorm (norm, then gate) over one element,
// rows with out aliasing x, Qwen3.5-like rows with bf16 w, and a wide row.
func gatedRMSNormCases() []Case {
	return gatedRMSNorm().cases([]gatedNormShape{{1, 1, 1, kernels.F32, false}, {5, 24, 1, kernels.F32, true}, {64, 128, 1, kernels.BF16, false}, {3, 1000, 1, kernels.F32, false}})
}

// gatedRMSNorm is LinearOps.GatedRMSNorm as a gatedNorm.
func gatedRMSNorm() gatedNorm {
	const eps = 1e-6
	return gatedNorm{
		op: "GatedRMSNorm", seed: 6500,
		name: func(s gatedNormShape) string {
			return fmt.Sprintf("rows=%d,dim=%d,w=%v,alias=%v", s.rows, s.dim, s.w, s.alias)
		},
		forward: func(b kernels.Backend, out, rstd, x, z, w kernels.Buffer, s gatedNormShape) {
			b.GatedRMSNorm(out, rstd, x, z, w, s.rows, s.dim, eps)
		},
		backward: func(b kernels.Backend, dx, dz, dy, x, z, w, rstd kernels.Buffer, s gatedNormShape) {
			b.GatedRMSNormBackward(dx, dz, dy, x, z, w, rstd, s.rows, s.dim)
		},
		ref: func(x, z, w []float64, s gatedNormShape) ([]float64, []float64) {
			return RefGatedRMSNorm(x, z, w, s.rows, s.dim, eps)
		},
		refBack: func(dy, x, z, w, rstd []float64, s gatedNormShape) ([]float64, []float64) {
			return RefGatedRMSNormBackward(dy, x, z, w, rstd, s.rows, s.dim)
		},
	}
}

// linearCases are every LinearOps case, in the suite's order.
func linearCases() []Case {
	var cs []Case
	// Each op's bf16 cases beside its f32 ones: the suite groups an op's
	// consecutive cases.
	norm := gatedRMSNormCases()
	split := 0
	for split < len(norm) && norm[split].Op == "GatedRMSNorm" {
		split++
	}
	normBF16, normBackBF16 := gatedRMSNormBF16Cases()
	for _, g := range [][]Case{causalConv1DCases(), causalConv1DBF16Cases(), causalConv1DBackwardCases(), causalConv1DBackwardBF16Cases(),
		gatedDeltaRuleCases(), gatedDeltaRuleBF16Cases(), gatedDeltaRuleBackwardCases(), gatedDeltaRuleBackwardBF16Cases(),
		deltaGatesCases(), norm[:split], normBF16, norm[split:], normBackBF16} {
		cs = append(cs, g...)
	}
	return cs
}
