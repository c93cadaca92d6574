package kerneltest

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// gpt-oss's expert cases: the clamped SwiGLU forward and backward over
// values on both sides of the clamps and planted exactly at them (the
// gradient passes at a bound, not past it), at gpt-oss's alpha 1.702 and
// limit 7 and at another pair; the backward with its outputs aliasing
// its inputs and against finite differences of the backend's forward
// (away from the bounds, where the function has no derivative); and the
// per-expert bias over a skewed grouping with an empty expert.

var clampedGLUs = []kernels.ClampedGLU{{Alpha: 1.702, Limit: 7}, {Alpha: 0.5, Limit: 2.5}}

// gluInputs draws gate and up across ±2·limit, with planted values at
// and around the bounds in front.
func (e *env) gluInputs(n int, c kernels.ClampedGLU) (gate, up []float32) {
	gate, up = e.uniform(n, 2*float64(c.Limit)), e.uniform(n, 2*float64(c.Limit))
	l := c.Limit
	pg := []float32{l, -l, l + 1e-3, l - 1e-3, 0, -40, 40, -1e-4}
	pu := []float32{-l, l, l + 1e-3, -l - 1e-3, 0, 40, -40, l - 1e-3}
	if n >= len(pg) {
		copy(gate, pg)
		copy(up, pu)
	}
	return gate, up
}

func clampedGLUCases() []Case {
	var cs, bw []Case
	for ci, c := range clampedGLUs {
		for i, n := range []int{1, 13, 1000} {
			c, n, seed := c, n, uint64(5700+10*ci+i)
			cs = append(cs, Case{Op: "ClampedSwiGLU", Name: fmt.Sprintf("n=%d,alpha=%g,limit=%g", n, c.Alpha, c.Limit), check: func(b kernels.Backend) error {
				e := newEnv(b, seed)
				defer e.free()
				gv, uv := e.gluInputs(n, c)
				gate, up := e.in("gate", gv), e.in("up", uv)
				out := e.out("out", nans(n))
				want := RefClampedSwiGLU(gate.values(), up.values(), float64(c.Alpha), float64(c.Limit))
				b.ClampedSwiGLU(out.view, gate.view, up.view, n, c)
				if err := e.checkAll(); err != nil {
					return err
				}
				return Compare("out", out.result(b), want, tolElementwise)
			}})
			for _, alias := range []bool{false, true} {
				alias := alias
				bw = append(bw, Case{Op: "ClampedSwiGLUBackward", Name: fmt.Sprintf("n=%d,alpha=%g,limit=%g,alias=%v", n, c.Alpha, c.Limit, alias), check: func(b kernels.Backend) error {
					e := newEnv(b, seed+100)
					defer e.free()
					gv, uv := e.gluInputs(n, c)
					dy := e.in("dy", e.uniform(n, 1))
					var gate, up, dgate, dup *operand
					if alias {
						gate, up = e.out("gate", gv), e.out("up", uv)
						dgate, dup = gate, up
					} else {
						gate, up = e.in("gate", gv), e.in("up", uv)
						dgate, dup = e.out("dgate", nans(n)), e.out("dup", nans(n))
					}
					wantG, wantU := RefClampedSwiGLUBackward(dy.values(), gate.values(), up.values(), float64(c.Alpha), float64(c.Limit))
					b.ClampedSwiGLUBackward(dgate.view, dup.view, dy.view, gate.view, up.view, n, c)
					if err := e.checkAll(); err != nil {
						return err
					}
					if err := Compare("dgate", dgate.result(b), wantG, tolElementwise); err != nil {
						return err
					}
					return Compare("dup", dup.result(b), wantU, tolElementwise)
				}})
			}
		}
	}
	cs = append(append(cs, activationBF16Cases("ClampedSwiGLU")...), bw...)
	cs = append(append(cs, activationBF16Cases("ClampedSwiGLUBackward")...), clampedGLUFDCase())
	return append(append(cs, groupedAddBiasCases()...), groupedAddBiasBF16Cases()...)
}

// clampedGLUFDCase checks the backward against finite differences with
// h = 1e-2, every value kept 0.05 from a bound so no step crosses one.
func clampedGLUFDCase() Case {
	c, n, seed := clampedGLUs[0], 500, uint64(5790)
	return Case{Op: "ClampedSwiGLUBackward", Name: fmt.Sprintf("fd,n=%d", n), check: func(b kernels.Backend) error {
		e := newEnv(b, seed)
		defer e.free()
		away := func(v []float32) []float32 {
			for i, x := range v {
				if math.Abs(math.Abs(float64(x))-float64(c.Limit)) < 0.05 {
					v[i] = x * 0.9
				}
			}
			return v
		}
		gv, uv := away(e.uniform(n, 2*float64(c.Limit))), away(e.uniform(n, 2*float64(c.Limit)))
		r := e.uniform(n, 1)
		gate, up, dy := e.in("gate", gv), e.in("up", uv), e.in("dy", r)
		y, dgate, dup := e.out("y", nans(n)), e.out("dgate", nans(n)), e.out("dup", nans(n))
		b.ClampedSwiGLUBackward(dgate.view, dup.view, dy.view, gate.view, up.view, n, c)
		if err := e.checkAll(); err != nil {
			return err
		}
		loss := func() (float64, float64, error) {
			b.ClampedSwiGLU(y.view, gate.view, up.view, n, c)
			l, labs := dotLoss(r, y.result(b))
			return l, labs, b.Sync()
		}
		return checkFD(e, 1e-2, []fdInput{
			{op: gate, x: gv, grad: dgate.result(b)},
			{op: up, x: uv, grad: dup.result(b)},
		}, loss)
	}}
}

func groupedAddBiasCases() []Case {
	shapes := []struct{ tokens, experts, topK, cols int }{{1, 1, 1, 1}, {9, 4, 2, 13}, {33, 8, 2, 70}, {40, 16, 4, 300}}
	var cs []Case
	for i, s := range shapes {
		s, seed := s, uint64(5800+i)
		cs = append(cs, Case{Op: "GroupedAddBias", Name: fmt.Sprintf("rows=%d,experts=%d,cols=%d", s.tokens*s.topK, s.experts, s.cols), check: func(b kernels.Backend) error {
			e := newEnv(b, seed)
			defer e.free()
			off, offOp, rows := e.groupedOperands(s.tokens, s.experts, s.topK)
			y := e.out("y", e.uniform(rows*s.cols, 1))
			bias := e.in("bias", e.uniform(s.experts*s.cols, 1))
			want := RefGroupedAddBias(y.values(), bias.values(), off, s.experts, s.cols)
			b.GroupedAddBias(y.view, bias.view, offOp.view, rows, s.experts, s.cols)
			if err := e.checkAll(); err != nil {
				return err
			}
			return Compare("y", y.result(b), want, tolElementwise)
		}})
	}
	// A run of the experts of a grouping over more (GroupedMatMul's
	// slice cases): its rows get their bias, the others are left.
	for i, sub := range [][2]int{{3, 3}, {0, 2}, {6, 2}} {
		const tokens, experts, topK, cols = 40, 8, 2, 21
		first, count, seed := sub[0], sub[1], uint64(5850+i)
		cs = append(cs, Case{Op: "GroupedAddBias", Name: fmt.Sprintf("experts[%d,%d) of %d", first, first+count, experts), check: func(b kernels.Backend) error {
			e := newEnv(b, seed)
			defer e.free()
			off, offOp, rows := e.groupedOperands(tokens, experts, topK)
			y := e.out("y", e.uniform(rows*cols, 1))
			bias := e.in("bias", e.uniform(count*cols, 1))
			want := RefGroupedAddBias(y.values(), bias.values(), off[first:first+count+1], count, cols)
			b.GroupedAddBias(y.view, bias.view, offOp.view.Slice(first, count+1), rows, count, cols)
			if err := e.checkAll(); err != nil {
				return err
			}
			return Compare("y", y.result(b), want, tolElementwise)
		}})
	}
	return cs
}
