package kerneltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// The SSMOps cases: the Mamba-2 scan over the LinearOps layouts (run
// lengths 1, 63, 64, 65, 200; runs out of token order, sharing an init
// slot, updating their own slot, writing no final state; decode-shaped
// calls), with groups fewer than heads and as many, and at the edges of dt
// (ssm_dt_cases.go); each backward against the reference and finite
// differences of the backend's own forward.
// Tolerance tolDelta: the same f32 recurrence over up to 200 tokens.

// ssmShapes: 4 heads in 2 groups, and one head per group with a
// model-sized state (Nemotron-3's stateSize is 128).
var ssmShapes = []SSMShape{{4, 8, 2, 16}, {2, 4, 2, 128}}

// ssmOperands draws a call's inputs: x, B, C in ±1, dtRaw from dt's range
// (ssmDtUsual: ±2, dt from 0.13 to 2.1), aLog in ±1 (A from −2.7 to
// −0.37), dtBias and d in ±0.5, states in ±0.5; xBC of dtype xdt.
func (e *env) ssmOperands(l linearLayout, s SSMShape, dt ssmDt, stateIn bool, xdt kernels.DType) (xBC, dtRaw, aLog, dtBias, d, st *operand) {
	raw := e.uniform(l.nTok*s.NHeads, (dt.hi-dt.lo)/2)
	for i := range raw {
		raw[i] += float32((dt.hi + dt.lo) / 2)
	}
	return e.floats("xBC", xdt, e.uniform(l.nTok*s.width(), 1), true), e.in("dtRaw", raw),
		e.in("aLog", e.uniform(s.NHeads, 1)), e.in("dtBias", e.uniform(s.NHeads, 0.5)), e.in("d", e.uniform(s.NHeads, 0.5)),
		e.floats("state", kernels.F32, e.uniform(l.slots*s.NHeads*s.hs(), 0.5), stateIn)
}

func ssmName(l linearLayout, s SSMShape, dt ssmDt) string {
	return fmt.Sprintf("%s,heads=%d/%d,headDim=%d,state=%d%s", l.name, s.NGroups, s.NHeads, s.HeadDim, s.StateSize, dt.name)
}

// ssmCall is one case's layout, shape and dt range.
type ssmCall struct {
	l  linearLayout
	s  SSMShape
	dt ssmDt
}

// ssmCalls are the usual calls: every layout with each shape.
func ssmCalls(backward bool) []ssmCall {
	var cs []ssmCall
	for _, l := range linearLayouts(backward) {
		for _, s := range ssmShapes {
			cs = append(cs, ssmCall{l, s, ssmDtUsual})
		}
	}
	return cs
}

func ssdScanCases() []Case {
	return ssdScanCasesOf(append(ssmCalls(false), ssmDtCalls(false)...), 6600)
}

func ssdScanCasesOf(calls []ssmCall, seed0 uint64) []Case {
	var cs []Case
	for i, c := range calls {
		l, s, dtr, seed := c.l, c.s, c.dt, seed0+uint64(i)
		cs = append(cs, Case{Op: "SSDScan", Name: ssmName(l, s, dtr), check: func(b kernels.Backend) error {
			e := newEnv(b, seed)
			defer e.free()
			xBC, dtRaw, aLog, dtBias, d, st := e.ssmOperands(l, s, dtr, false, kernels.F32)
			runs := e.ints("runs", flattenRuns(l.runs))
			y := e.out("y", nans(l.nTok*s.NHeads*s.HeadDim))
			wantSt := st.values()
			want := RefSSDScan(xBC.values(), dtRaw.values(), aLog.values(), dtBias.values(), d.values(), wantSt, l.runs, l.nTok, s)
			b.SSDScan(y.view, xBC.view, dtRaw.view, aLog.view, dtBias.view, d.view, st.view, runs.view, len(l.runs), l.nTok,
				s.NHeads, s.HeadDim, s.NGroups, s.StateSize)
			if err := e.checkAll(); err != nil {
				return err
			}
			if err := Compare("y", y.result(b), want, tolDelta); err != nil {
				return err
			}
			return Compare("state", st.result(b), wantSt, tolDelta)
		}})
	}
	return cs
}

func ssdScanBackwardCases() []Case {
	return ssdScanBackwardCasesOf(append(ssmCalls(true), ssmDtCalls(true)...), 6700)
}

func ssdScanBackwardCasesOf(calls []ssmCall, seed0 uint64) []Case {
	var cs []Case
	for i, c := range calls {
		l, s, dtr, seed := c.l, c.s, c.dt, seed0+uint64(i)
		hs := s.NHeads * s.hs()
		run := func(b kernels.Backend, fd bool) error {
			e := newEnv(b, seed)
			defer e.free()
			xBC, dtRaw, aLog, dtBias, d, st := e.ssmOperands(l, s, dtr, true, kernels.F32)
			runs := e.ints("runs", flattenRuns(l.runs))
			dy := e.in("dy", e.uniform(l.nTok*s.NHeads*s.HeadDim, 1))
			d0 := e.uniform(l.slots*hs, 1)
			dst := e.out("dState", d0)
			dxBC := e.out("dxBC", nans(l.nTok*s.width()))
			ddt := e.out("ddtRaw", nans(l.nTok*s.NHeads))
			wantD := dst.values()
			wx, wdt := RefSSDScanBackward(wantD, dy.values(), xBC.values(), dtRaw.values(), aLog.values(), dtBias.values(), d.values(),
				st.values(), l.runs, l.nTok, s)
			b.SSDScanBackward(dxBC.view, ddt.view, dst.view, dy.view, xBC.view, dtRaw.view, aLog.view, dtBias.view, d.view, st.view,
				runs.view, len(l.runs), l.nTok, s.NHeads, s.HeadDim, s.NGroups, s.StateSize)
			if err := e.checkAll(); err != nil {
				return err
			}
			gx, gdt, gd := dxBC.result(b), ddt.result(b), dst.result(b)
			if !fd {
				if err := Compare("dxBC", gx, wx, tolDelta); err != nil {
					return err
				}
				if err := Compare("ddtRaw", gdt, wdt, tolDelta); err != nil {
					return err
				}
				return Compare("dState", gd, wantD, tolDelta)
			}
			dFinal := zeroOutside(d0, l.finals(), hs)
			dInit := make([]float32, len(gd))
			for j := range gd {
				dInit[j] = gd[j] - d0[j]
			}
			y := e.out("y", nans(l.nTok*s.NHeads*s.HeadDim))
			sc := e.out("state after", nans(l.slots*hs))
			r := dy.result(b)
			return checkFD(e, 1e-2, []fdInput{
				{op: xBC, x: xBC.result(b), grad: gx},
				{op: dtRaw, x: dtRaw.result(b), grad: gdt},
				{op: st, x: st.result(b), grad: dInit, frozen: frozenOutside(l.inits(), hs)},
			}, func() (float64, float64, error) {
				b.Copy(sc.view, st.view)
				b.SSDScan(y.view, xBC.view, dtRaw.view, aLog.view, dtBias.view, d.view, sc.view, runs.view, len(l.runs), l.nTok,
					s.NHeads, s.HeadDim, s.NGroups, s.StateSize)
				if err := b.Sync(); err != nil {
					return 0, 0, err
				}
				l1, a1 := dotLoss(r, y.result(b))
				l2, a2 := dotLoss(dFinal, sc.result(b))
				return l1 + l2, a1 + a2, nil
			})
		}
		name := ssmName(l, s, dtr)
		cs = append(cs, Case{Op: "SSDScanBackward", Name: name, check: func(b kernels.Backend) error { return run(b, false) }})
		if l.nTok <= 65 {
			cs = append(cs, Case{Op: "SSDScanBackward", Name: "fd," + name, check: func(b kernels.Backend) error { return run(b, true) }})
		}
	}
	return cs
}
