package cpu

import (
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// AddBias and Add sum in f32 (a BF16 operand holds bf16 values already)
// and round a BF16 result once, as the CUDA kernels store it.
func (be *Backend) AddBias(x, bias kernels.Buffer, rows, cols int) {
	positive("AddBias", rows, cols)
	xs := floats("AddBias", "x", x, rows*cols)
	bs := floats("AddBias", "bias", bias, cols)
	round := x.DType() == kernels.BF16
	if be.vec != nil {
		be.parallel(rows, cols, func(lo, hi int) {
			be.vec.addBias(xs[lo*cols:hi*cols], bs, hi-lo)
			if round {
				castBF16(xs[lo*cols:hi*cols], xs[lo*cols:hi*cols])
			}
		})
		return
	}
	be.parallel(rows, cols, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := xs[r*cols : (r+1)*cols]
			for c, b := range bs {
				row[c] += b
			}
			if round {
				castBF16(row, row)
			}
		}
	})
}

// Add is element-by-element, so out aliasing a or b is safe.
func (be *Backend) Add(out, a, b kernels.Buffer, n int) {
	positive("Add", n)
	os := floats("Add", "out", out, n)
	as := floats("Add", "a", a, n)
	bs := floats("Add", "b", b, n)
	round := out.DType() == kernels.BF16
	if be.vec != nil {
		be.parallel(n, 1, func(lo, hi int) {
			be.vec.add(os[lo:hi], as[lo:hi], bs[lo:hi])
			if round {
				castBF16(os[lo:hi], os[lo:hi])
			}
		})
		return
	}
	be.parallel(n, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			os[i] = as[i] + bs[i]
		}
		if round {
			castBF16(os[lo:hi], os[lo:hi])
		}
	})
}

// SwiGLU computes g/(1+e^−g) (in float64 on the Go path, in float32 with
// the vector exp on the C one): for g ≪ 0, e^−g overflows to +Inf and the
// quotient is the correct −0 rather than NaN.
func (be *Backend) SwiGLU(out, gate, up kernels.Buffer, n int) {
	positive("SwiGLU", n)
	os, bf := floatsOut("SwiGLU", "out", out, n)
	gs := floats("SwiGLU", "gate", gate, n)
	us := floats("SwiGLU", "up", up, n)
	if be.vec != nil {
		be.parallel(n, 4, func(lo, hi int) {
			be.vec.swiGLU(os[lo:hi], gs[lo:hi], us[lo:hi])
			if bf {
				castBF16(os[lo:hi], os[lo:hi])
			}
		})
		return
	}
	be.parallel(n, 20, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			g := float64(gs[i])
			os[i] = roundIf(bf, float32(g/(1+math.Exp(-g))*float64(us[i])))
		}
	})
}

// logistic is σ(g) in float64 without overflow: e^−|g| never exceeds 1.
func logistic(g float64) float64 {
	e := math.Exp(-math.Abs(g))
	if g >= 0 {
		return 1 / (1 + e)
	}
	return e / (1 + e)
}

// SigmoidGate reads x and gate at an index before writing out there, so
// out may alias either. A BF16 out gets each product rounded once.
func (be *Backend) SigmoidGate(out, x, gate kernels.Buffer, n int) {
	const op = "SigmoidGate"
	positive(op, n)
	os, bf := floatsOut(op, "out", out, n)
	xs, gs := floats(op, "x", x, n), floats(op, "gate", gate, n)
	be.parallel(n, 20, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			os[i] = roundIf(bf, float32(float64(xs[i])*logistic(float64(gs[i]))))
		}
	})
}
