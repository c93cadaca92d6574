package kerneltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// The LinearOps over bf16 activations (a bf16 model's DeltaNet layers):
// every combination of F32 and BF16 activation operands but the all-F32
// one (the cases of linear_cases.go), over layouts whose runs are not a
// multiple of the chunk (several runs in one call, a 200-token run, and
// decode-shaped calls, which take the gated delta rule's per-token
// kernel). The references read the BF16 inputs' stored values; a BF16
// output is held by CompareStored (every stored value a bf16 value and
// the rounding of the reference within the op's tolerance). The states,
// gates and the conv-state gradient stay F32 and are held as tightly as
// in the F32 cases.

// linearLayoutsNamed are the layouts of linearLayouts(backward) with the
// names given, in that order.
func linearLayoutsNamed(backward bool, names ...string) []linearLayout {
	var ls []linearLayout
	for _, n := range names {
		for _, l := range linearLayouts(backward) {
			if l.name == n {
				ls = append(ls, l)
			}
		}
	}
	if len(ls) != len(names) {
		panic(fmt.Sprintf("kerneltest: layouts %v: found %d", names, len(ls)))
	}
	return ls
}

// bf16Layouts are the layouts the bf16 cases run: a long run from a slot,
// the mixed call (five runs, 65, 1, 64, 3 and 7 tokens), and decode.
func bf16Layouts(backward bool) []linearLayout {
	return linearLayoutsNamed(backward, "slot0→1,n=200", "mixed", "decode,8×1")
}

func causalConv1DBF16Cases() []Case {
	var cs []Case
	names := []string{"out", "x"}
	for i, l := range bf16Layouts(false) {
		for j, k := range []struct {
			channels, kernel int
			w                kernels.DType
			bias             bool
		}{{37, 4, kernels.F32, false}, {21, 4, kernels.BF16, true}} {
			for mask := 1; mask < 4; mask++ {
				l, k, dts, seed := l, k, dtypesOf(mask, 2), uint64(7000+100*i+10*j+mask)
				name := fmt.Sprintf("%s,ch=%d,kernel=%d,w=%v,bias=%v,%s", l.name, k.channels, k.kernel, k.w, k.bias, dtypeNames(names, dts))
				cs = append(cs, Case{Op: "CausalConv1D", Name: name, check: func(b kernels.Backend) error {
					e := newEnv(b, seed)
					defer e.free()
					x := e.floats("x", dts[1], e.uniform(l.nTok*k.channels, 2), true)
					w := e.floats("w", k.w, e.uniform(k.channels*k.kernel, 1), true)
					bias, biasRef := convBiasOperand(e, k.w, k.channels, k.bias)
					st := e.out("convState", e.uniform(l.slots*(k.kernel-1)*k.channels, 2))
					runs := e.ints("runs", flattenRuns(l.runs))
					out := e.floats("out", dts[0], nans(l.nTok*k.channels), false)
					wantSt := st.values()
					want := RefCausalConv1D(x.values(), w.values(), biasRef, wantSt, l.runs, l.nTok, k.channels, k.kernel)
					b.CausalConv1D(out.view, x.view, w.view, bias, st.view, runs.view, len(l.runs), l.nTok, k.channels, k.kernel)
					if err := e.checkAll(); err != nil {
						return err
					}
					if err := CompareStored("out", dts[0], out.result(b), want, tolElementwise); err != nil {
						return err
					}
					return Compare("convState", st.result(b), wantSt, tolExact)
				}})
			}
		}
	}
	return cs
}

func causalConv1DBackwardBF16Cases() []Case {
	var cs []Case
	names := []string{"dx", "dout", "x"}
	for i, l := range bf16Layouts(true) {
		const channels, kernel = 29, 4
		per := (kernel - 1) * channels
		for mask := 1; mask < 8; mask++ {
			// Bias and bf16 weights on odd masks (Mamba-2's, the bf16 kernels).
			l, dts, seed, withBias := l, dtypesOf(mask, 3), uint64(7400+10*i+mask), mask%2 == 1
			wdt := kernels.F32
			if withBias {
				wdt = kernels.BF16
			}
			name := fmt.Sprintf("%s,w=%v,bias=%v,%s", l.name, wdt, withBias, dtypeNames(names, dts))
			cs = append(cs, Case{Op: "CausalConv1DBackward", Name: name, check: func(b kernels.Backend) error {
				e := newEnv(b, seed)
				defer e.free()
				x := e.floats("x", dts[2], e.uniform(l.nTok*channels, 2), true)
				w := e.floats("w", wdt, e.uniform(channels*kernel, 1), true)
				bias, biasRef := convBiasOperand(e, wdt, channels, withBias)
				st := e.in("convState", e.uniform(l.slots*per, 2))
				runs := e.ints("runs", flattenRuns(l.runs))
				dout := e.floats("dout", dts[1], e.uniform(l.nTok*channels, 1), true)
				dst := e.out("dConvState", e.uniform(l.slots*per, 1))
				dx := e.floats("dx", dts[0], nans(l.nTok*channels), false)
				wantD := dst.values()
				want := RefCausalConv1DBackward(wantD, dout.values(), x.values(), w.values(), biasRef, st.values(), l.runs, l.nTok, channels, kernel)
				b.CausalConv1DBackward(dx.view, dst.view, dout.view, x.view, w.view, bias, st.view, runs.view, len(l.runs), l.nTok, channels, kernel)
				if err := e.checkAll(); err != nil {
					return err
				}
				if err := CompareStored("dx", dts[0], dx.result(b), want, tolElementwise); err != nil {
					return err
				}
				return Compare("dConvState", dst.result(b), wantD, tolElementwise)
			}})
		}
	}
	return cs
}

// deltaBF16Jobs are the bf16 cases' (layout, shape) pairs: every bf16
// layout with grouped heads, the mixed call with equal heads too, and a
// model-sized head pair (dimK = dimV = 128) past a chunk.
func deltaBF16Jobs(backward bool) []struct {
	l linearLayout
	s DeltaShape
} {
	type job = struct {
		l linearLayout
		s DeltaShape
	}
	var jobs []job
	for _, l := range bf16Layouts(backward) {
		jobs = append(jobs, job{l, deltaShapes[0]})
		if l.name == "mixed" {
			jobs = append(jobs, job{l, deltaShapes[1]})
		}
	}
	return append(jobs, job{linearLayout{"slot0→1,n=70", []LinearRun{{0, 70, 0, 1}}, 70, 2}, DeltaShape{1, 2, 128, 128}})
}

func gatedDeltaRuleBF16Cases() []Case {
	var cs []Case
	names := []string{"out", "qkv"}
	for i, j := range deltaBF16Jobs(false) {
		for mask := 1; mask < 4; mask++ {
			if j.s.DimK == 128 && mask != 3 {
				continue
			}
			l, s, dts, seed := j.l, j.s, dtypesOf(mask, 2), uint64(7600+10*i+mask)
			cs = append(cs, Case{Op: "GatedDeltaRule", Name: deltaName(l, s) + "," + dtypeNames(names, dts), check: func(b kernels.Backend) error {
				e := newEnv(b, seed)
				defer e.free()
				qkv, g, beta, st := e.deltaOperandsAs(l, s, false, dts[1])
				runs := e.ints("runs", flattenRuns(l.runs))
				out := e.floats("out", dts[0], nans(l.nTok*s.NHeadV*s.DimV), false)
				wantSt := st.values()
				want := RefGatedDeltaRule(qkv.values(), g.values(), beta.values(), wantSt, l.runs, l.nTok, s)
				b.GatedDeltaRule(out.view, qkv.view, g.view, beta.view, st.view, runs.view, len(l.runs), l.nTok, s.NHeadK, s.NHeadV, s.DimK, s.DimV)
				if err := e.checkAll(); err != nil {
					return err
				}
				if err := CompareStored("out", dts[0], out.result(b), want, tolDelta); err != nil {
					return err
				}
				return Compare("state", st.result(b), wantSt, tolDelta)
			}})
		}
	}
	return cs
}

func gatedDeltaRuleBackwardBF16Cases() []Case {
	var cs []Case
	names := []string{"dqkv", "dout", "qkv"}
	for i, j := range deltaBF16Jobs(true) {
		for mask := 1; mask < 8; mask++ {
			if (j.s.DimK == 128 || j.l.nTok == 200) && mask != 7 {
				continue
			}
			l, s, dts, seed := j.l, j.s, dtypesOf(mask, 3), uint64(7800+10*i+mask)
			hs := s.NHeadV * s.DimK * s.DimV
			cs = append(cs, Case{Op: "GatedDeltaRuleBackward", Name: deltaName(l, s) + "," + dtypeNames(names, dts), check: func(b kernels.Backend) error {
				e := newEnv(b, seed)
				defer e.free()
				qkv, g, beta, st := e.deltaOperandsAs(l, s, true, dts[2])
				runs := e.ints("runs", flattenRuns(l.runs))
				dout := e.floats("dout", dts[1], e.uniform(l.nTok*s.NHeadV*s.DimV, 1), true)
				dst := e.out("dState", e.uniform(l.slots*hs, 1))
				dqkv := e.floats("dqkv", dts[0], nans(l.nTok*s.width()), false)
				dg := e.out("dg", nans(l.nTok*s.NHeadV))
				dbeta := e.out("dbeta", nans(l.nTok*s.NHeadV))
				wantD := dst.values()
				wq, wg, wb := RefGatedDeltaRuleBackward(wantD, dout.values(), qkv.values(), g.values(), beta.values(), st.values(), l.runs, l.nTok, s)
				b.GatedDeltaRuleBackward(dqkv.view, dg.view, dbeta.view, dst.view, dout.view, qkv.view, g.view, beta.view, st.view, runs.view,
					len(l.runs), l.nTok, s.NHeadK, s.NHeadV, s.DimK, s.DimV)
				if err := e.checkAll(); err != nil {
					return err
				}
				if err := CompareStored("dqkv", dts[0], dqkv.result(b), wq, tolDelta); err != nil {
					return err
				}
				for _, c := range []struct {
					what string
					got  []float32
					want []float64
				}{{"dg", dg.result(b), wg}, {"dbeta", dbeta.result(b), wb}, {"dState", dst.result(b), wantD}} {
					if err := Compare(c.what, c.got, c.want, tolDelta); err != nil {
						return err
					}
				}
				return nil
			}})
		}
	}
	return cs
}

// deltaOperandsAs is deltaOperands with qkv of dtype dt (its values
// rounded to bf16 for BF16, which the reference then reads).
func (e *env) deltaOperandsAs(l linearLayout, s DeltaShape, stateIn bool, dt kernels.DType) (qkv, g, beta, st *operand) {
	qkv, g, beta, st = e.deltaOperands(l, s, stateIn)
	if dt == kernels.F32 {
		return qkv, g, beta, st
	}
	return e.floats("qkv", dt, qkv.f[qkv.g():qkv.g()+qkv.n], true), g, beta, st
}
