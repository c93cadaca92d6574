package kerneltest

import "github.com/grpo-dev/grpo/kernels"

// The scan over BF16 activations (a bf16 model's Mamba-2 layer): SSDScan
// with every F32/BF16 combination of y and xBC but the all-F32 one, and
// SSDScanBackward with every combination of dxBC, dy and xBC; dtRaw, aLog,
// dtBias, d, the states and ddtRaw stay F32. A BF16 input holds bf16
// values, which the float64 reference reads too; a BF16 output must be a
// bf16 value, the rounding of one within tolDelta (CompareStored). The
// layouts: "mixed" (140 tokens in 5 runs of 65, 1, 64, 3 and 7: the
// chunked kernels where the path is chosen by shape) and ssmShortRuns
// (37 tokens in 4 runs of 20, 5, 9 and 3: the recurrent kernels, a run
// across a replay stretch of 16), each with 4 heads in 2 groups; the
// all-BF16 combination also with Nemotron-3's state of 128.

// ssmShortRuns is a layout whose runs average under a quarter chunk:
// from none into slot 0, from slot 1 into 2, into none, and from slot 3
// into itself (forward) or into slot 4 (backward).
func ssmShortRuns(backward bool) linearLayout {
	last := LinearRun{34, 3, 3, 3}
	if backward {
		last.Final = 4
	}
	return linearLayout{"short runs", []LinearRun{{0, 20, -1, 0}, {20, 5, 1, 2}, {25, 9, -1, -1}, last}, 37, 5}
}

// ssmBF16Calls are the layouts "mixed" and ssmShortRuns with shape s.
func ssmBF16Calls(backward bool, s SSMShape) []ssmCall {
	cs := []ssmCall{{ssmShortRuns(backward), s, ssmDtUsual}}
	for _, l := range linearLayouts(backward) {
		if l.name == "mixed" {
			cs = append(cs, ssmCall{l, s, ssmDtUsual})
		}
	}
	if len(cs) != 2 {
		panic("kerneltest: the linear layout \"mixed\" is gone")
	}
	return cs
}

// ssmBF16Shapes are the shapes a combination runs with: 4 heads in 2
// groups, and the all-BF16 one (mask all) also with a state of 128.
func ssmBF16Shapes(mask, all int) []SSMShape {
	if mask == all {
		return ssmShapes
	}
	return ssmShapes[:1]
}

func ssdScanBF16Cases() []Case {
	var cs []Case
	names := []string{"y", "xBC"}
	for mask := 1; mask < 4; mask++ {
		dts := dtypesOf(mask, 2)
		for j, s := range ssmBF16Shapes(mask, 3) {
			for k, c := range ssmBF16Calls(false, s) {
				l, seed := c.l, uint64(6900+16*mask+4*j+k)
				cs = append(cs, Case{Op: "SSDScan", Name: ssmName(l, s, c.dt) + "," + dtypeNames(names, dts), check: func(b kernels.Backend) error {
					e := newEnv(b, seed)
					defer e.free()
					xBC, dtRaw, aLog, dtBias, d, st := e.ssmOperands(l, s, ssmDtUsual, false, dts[1])
					runs := e.ints("runs", flattenRuns(l.runs))
					y := e.floats("y", dts[0], nans(l.nTok*s.NHeads*s.HeadDim), false)
					wantSt := st.values()
					want := RefSSDScan(xBC.values(), dtRaw.values(), aLog.values(), dtBias.values(), d.values(), wantSt, l.runs, l.nTok, s)
					b.SSDScan(y.view, xBC.view, dtRaw.view, aLog.view, dtBias.view, d.view, st.view, runs.view, len(l.runs), l.nTok,
						s.NHeads, s.HeadDim, s.NGroups, s.StateSize)
					if err := e.checkAll(); err != nil {
						return err
					}
					if err := CompareStored("y", dts[0], y.result(b), want, tolDelta); err != nil {
						return err
					}
					return Compare("state", st.result(b), wantSt, tolDelta)
				}})
			}
		}
	}
	return cs
}

func ssdScanBackwardBF16Cases() []Case {
	var cs []Case
	names := []string{"dxBC", "dy", "xBC"}
	for mask := 1; mask < 8; mask++ {
		dts := dtypesOf(mask, 3)
		for j, s := range ssmBF16Shapes(mask, 7) {
			for k, c := range ssmBF16Calls(true, s) {
				l, seed, hs := c.l, uint64(7000+16*mask+4*j+k), s.NHeads*s.hs()
				cs = append(cs, Case{Op: "SSDScanBackward", Name: ssmName(l, s, c.dt) + "," + dtypeNames(names, dts), check: func(b kernels.Backend) error {
					e := newEnv(b, seed)
					defer e.free()
					xBC, dtRaw, aLog, dtBias, d, st := e.ssmOperands(l, s, ssmDtUsual, true, dts[2])
					runs := e.ints("runs", flattenRuns(l.runs))
					dy := e.floats("dy", dts[1], e.uniform(l.nTok*s.NHeads*s.HeadDim, 1), true)
					dst := e.out("dState", e.uniform(l.slots*hs, 1))
					dxBC := e.floats("dxBC", dts[0], nans(l.nTok*s.width()), false)
					ddt := e.out("ddtRaw", nans(l.nTok*s.NHeads))
					wantD := dst.values()
					wx, wdt := RefSSDScanBackward(wantD, dy.values(), xBC.values(), dtRaw.values(), aLog.values(), dtBias.values(), d.values(),
						st.values(), l.runs, l.nTok, s)
					b.SSDScanBackward(dxBC.view, ddt.view, dst.view, dy.view, xBC.view, dtRaw.view, aLog.view, dtBias.view, d.view, st.view,
						runs.view, len(l.runs), l.nTok, s.NHeads, s.HeadDim, s.NGroups, s.StateSize)
					if err := e.checkAll(); err != nil {
						return err
					}
					if err := CompareStored("dxBC", dts[0], dxBC.result(b), wx, tolDelta); err != nil {
						return err
					}
					if err := Compare("ddtRaw", ddt.result(b), wdt, tolDelta); err != nil {
						return err
					}
					return Compare("dState", dst.result(b), wantD, tolDelta)
				}})
			}
		}
	}
	return cs
}
