package kerneltest

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// RefReLU2 returns max(x, 0)².
func RefReLU2(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		r := math.Max(v, 0)
		out[i] = r * r
	}
	return out
}

// RefReLU2Backward returns dx = 2·max(x, 0)·dy.
func RefReLU2Backward(dy, x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = 2 * math.Max(v, 0) * dy[i]
	}
	return out
}

// reLU2Cases: the forward and backward against the references, over
// negative, zero and positive inputs (the extremes ±1e3 and ±1e-3 among
// them), with and without the output aliasing its input, and the
// backward against finite differences of the backend's forward.
// Tolerance tolElementwise: one rounding each.
func reLU2Cases() []Case {
	var cs, bs []Case
	extremes := []float32{-1000, -1, -1e-3, 0, 1e-3, 1, 1000}
	for i, n := range []int{1, 7, 1000, 70001} {
		for _, alias := range []bool{false, true} {
			n, alias, seed := n, alias, uint64(7100+2*i)
			name := fmt.Sprintf("n=%d,alias=%v", n, alias)
			cs = append(cs, Case{Op: "ReLU2", Name: name, check: func(b kernels.Backend) error {
				e := newEnv(b, seed)
				defer e.free()
				xv := e.uniform(n, 3)
				copy(xv, extremes)
				var x, out *operand
				if alias {
					x = e.out("x", xv)
					out = x
				} else {
					x, out = e.in("x", xv), e.out("out", nans(n))
				}
				want := RefReLU2(x.values())
				b.ReLU2(out.view, x.view, n)
				if err := e.checkAll(); err != nil {
					return err
				}
				return Compare("out", out.result(b), want, tolElementwise)
			}})
			bs = append(bs, Case{Op: "ReLU2Backward", Name: name, check: func(b kernels.Backend) error {
				e := newEnv(b, seed+1)
				defer e.free()
				xv := e.uniform(n, 3)
				copy(xv, extremes)
				x := e.in("x", xv)
				var dy, dx *operand
				if alias {
					dy = e.out("dy", e.uniform(n, 1))
					dx = dy
				} else {
					dy, dx = e.in("dy", e.uniform(n, 1)), e.out("dx", nans(n))
				}
				want := RefReLU2Backward(dy.values(), x.values())
				b.ReLU2Backward(dx.view, dy.view, x.view, n)
				if err := e.checkAll(); err != nil {
					return err
				}
				return Compare("dx", dx.result(b), want, tolElementwise)
			}})
		}
	}
	n, seed := 500, uint64(7190)
	bs = append(bs, Case{Op: "ReLU2Backward", Name: fmt.Sprintf("fd,n=%d", n), check: func(b kernels.Backend) error {
		e := newEnv(b, seed)
		defer e.free()
		xv, r := e.uniform(n, 2), e.uniform(n, 1)
		x, dy := e.in("x", xv), e.in("dy", r)
		y, dx := e.out("y", nans(n)), e.out("dx", nans(n))
		b.ReLU2Backward(dx.view, dy.view, x.view, n)
		if err := e.checkAll(); err != nil {
			return err
		}
		return checkFD(e, 1e-2, []fdInput{{op: x, x: xv, grad: dx.result(b)}}, func() (float64, float64, error) {
			b.ReLU2(y.view, x.view, n)
			l, labs := dotLoss(r, y.result(b))
			return l, labs, b.Sync()
		})
	}})
	cs = append(append(cs, activationBF16Cases("ReLU2")...), bs...)
	return append(cs, activationBF16Cases("ReLU2Backward")...)
}
