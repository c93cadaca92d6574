package kerneltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// The MoE row ops over bf16 activations (a bf16 MoE's tensors between
// ops): GatherRows into a BF16 out from either table, CopyColumns with a
// BF16 dst, src or both, MoECombine and MoECombineBackward with each mix
// of F32 and BF16 activations (weights and dweights stay F32), and
// GroupedAddBias over a BF16 y; column counts are not multiples of a
// warp. Copies are exact (a BF16 out holds the rounding of its source,
// CompareStored at tolExact); sums are held to their F32 cases'
// tolerances, a BF16 output by CompareStored (every stored value a bf16
// value, the bf16 rounding of a value within the tolerance).

var rowBF16 = []kernels.DType{kernels.F32, kernels.BF16}

// gatherRowsBF16Cases gather into a BF16 out from an F32 table (rounded
// once) and a BF16 one (copied exactly).
func gatherRowsBF16Cases() []Case {
	var cs []Case
	for i, s := range []struct {
		rows, cols int
		idx        []int32
	}{{11, 7, []int32{0, 10, 3, 3, 9}}, {40, 300, []int32{39, 0, 17, 17, 5, 38, 1, 20}}} {
		for _, dt := range rowBF16 {
			s, dt, seed := s, dt, uint64(9300+i)
			cs = append(cs, Case{Op: "GatherRows", Name: fmt.Sprintf("rows=%d,cols=%d,n=%d,table=%v,out=bf16", s.rows, s.cols, len(s.idx), dt),
				check: func(b kernels.Backend) error {
					return checkGatherRows(b, seed, s.rows, s.cols, s.idx, dt, kernels.BF16)
				}})
		}
	}
	return cs
}

// copyColumnsBF16Cases split and join with dst, src or both BF16 (Mamba's
// bf16 in_proj output into bf16 z/xBC and an f32 dt, and back).
func copyColumnsBF16Cases() []Case {
	var cs []Case
	for i, s := range []struct{ rows, width, dstCols, dstOff, srcCols, srcOff int }{
		{5, 1, 3, 2, 4, 1}, {3, 300, 300, 0, 600, 300}, {9, 33, 97, 64, 33, 0},
	} {
		for mask := 1; mask < 4; mask++ {
			s, dts, seed := s, dtypesOf(mask, 2), uint64(9320+4*i+mask)
			cs = append(cs, Case{Op: "CopyColumns", Name: fmt.Sprintf("rows=%d,width=%d,dst=%d@%d,src=%d@%d,%s", s.rows, s.width, s.dstCols, s.dstOff, s.srcCols, s.srcOff, dtypeNames([]string{"dst", "src"}, dts)),
				check: func(b kernels.Backend) error {
					e := newEnv(b, seed)
					defer e.free()
					src := e.floats("src", dts[1], e.uniform(s.rows*s.srcCols, 2), true)
					dst := e.floats("dst", dts[0], e.uniform(s.rows*s.dstCols, 1), false)
					want := RefCopyColumns(dst.values(), src.values(), s.rows, s.width, s.dstCols, s.dstOff, s.srcCols, s.srcOff)
					b.CopyColumns(dst.view, src.view, s.rows, s.width, s.dstCols, s.dstOff, s.srcCols, s.srcOff)
					if err := e.checkAll(); err != nil {
						return err
					}
					return CompareStored("dst", dts[0], dst.result(b), want, tolExact)
				}})
		}
	}
	return cs
}

// moeCombineBF16Cases: out, x or both BF16, weighted and unit.
func moeCombineBF16Cases() []Case {
	var cs []Case
	for i, s := range combineShapes {
		for mask := 1; mask < 4; mask++ {
			for _, unit := range []bool{false, true} {
				s, dts, unit, seed := s, dtypesOf(mask, 2), unit, uint64(9340+4*i+mask)
				cs = append(cs, Case{Op: "MoECombine", Name: fmt.Sprintf("n=%d,k=%d,cols=%d,unit=%v,%s", s.n, s.topK, s.cols, unit, dtypeNames([]string{"out", "x"}, dts)), check: func(b kernels.Backend) error {
					e := newEnv(b, seed)
					defer e.free()
					rowsH := e.combineRows(s.n, s.experts, s.topK)
					rows := e.ints("rows", rowsH)
					x := e.floats("x", dts[1], e.uniform(s.n*s.topK*s.cols, 1), true)
					var w kernels.Buffer
					var wv []float64
					if !unit {
						wo := e.in("weights", e.uniform(s.n*s.topK, 1))
						w, wv = wo.view, wo.values()
					}
					out := e.floats("out", dts[0], nans(s.n*s.cols), false)
					want := RefMoECombine(x.values(), wv, rowsH, s.n, s.topK, s.cols)
					b.MoECombine(out.view, x.view, w, rows.view, s.n, s.topK, s.cols)
					if err := e.checkAll(); err != nil {
						return err
					}
					return CompareStored("out", dts[0], out.result(b), want, tolReduction)
				}})
			}
		}
	}
	return cs
}

// moeCombineBackwardBF16Cases: every mix of F32 and BF16 dx, dout and x
// but the all-F32 one; dweights F32.
func moeCombineBackwardBF16Cases() []Case {
	var cs []Case
	for i, s := range combineShapes {
		for mask := 1; mask < 8; mask++ {
			s, dts, seed := s, dtypesOf(mask, 3), uint64(9360+8*i+mask)
			cs = append(cs, Case{Op: "MoECombineBackward", Name: fmt.Sprintf("n=%d,k=%d,cols=%d,%s", s.n, s.topK, s.cols, dtypeNames([]string{"dx", "dout", "x"}, dts)), check: func(b kernels.Backend) error {
				e := newEnv(b, seed)
				defer e.free()
				rowsH := e.combineRows(s.n, s.experts, s.topK)
				rows := e.ints("rows", rowsH)
				x := e.floats("x", dts[2], e.uniform(s.n*s.topK*s.cols, 1), true)
				w := e.in("weights", e.uniform(s.n*s.topK, 1))
				dout := e.floats("dout", dts[1], e.uniform(s.n*s.cols, 1), true)
				dx := e.floats("dx", dts[0], nans(s.n*s.topK*s.cols), false)
				dw := e.out("dweights", nans(s.n*s.topK))
				b.MoECombineBackward(dx.view, dw.view, dout.view, x.view, w.view, rows.view, s.n, s.topK, s.cols)
				if err := e.checkAll(); err != nil {
					return err
				}
				wx, ww := RefMoECombineBackward(dout.values(), x.values(), w.values(), rowsH, s.n, s.topK, s.cols)
				if err := CompareStored("dx", dts[0], dx.result(b), wx, tolRounded); err != nil {
					return err
				}
				return Compare("dweights", dw.result(b), ww, tolReduction)
			}})
		}
	}
	return cs
}

// groupedAddBiasBF16Cases add an F32 bias into a BF16 y, over every
// expert and over a run of them (rows outside it keep their values).
func groupedAddBiasBF16Cases() []Case {
	var cs []Case
	for i, s := range []struct{ tokens, experts, topK, cols, first, count int }{
		{9, 4, 2, 13, 0, 4}, {40, 16, 4, 300, 0, 16}, {40, 8, 2, 21, 3, 3},
	} {
		s, seed := s, uint64(9390+i)
		cs = append(cs, Case{Op: "GroupedAddBias", Name: fmt.Sprintf("rows=%d,experts[%d,%d) of %d,cols=%d,y=bf16", s.tokens*s.topK, s.first, s.first+s.count, s.experts, s.cols), check: func(b kernels.Backend) error {
			e := newEnv(b, seed)
			defer e.free()
			off, offOp, rows := e.groupedOperands(s.tokens, s.experts, s.topK)
			y := e.floats("y", kernels.BF16, e.uniform(rows*s.cols, 1), false)
			bias := e.in("bias", e.uniform(s.count*s.cols, 1))
			want := RefGroupedAddBias(y.values(), bias.values(), off[s.first:s.first+s.count+1], s.count, s.cols)
			b.GroupedAddBias(y.view, bias.view, offOp.view.Slice(s.first, s.count+1), rows, s.count, s.cols)
			if err := e.checkAll(); err != nil {
				return err
			}
			return CompareStored("y", kernels.BF16, y.result(b), want, tolRounded)
		}})
	}
	return cs
}
