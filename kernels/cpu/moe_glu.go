package cpu

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// gpt-oss's clamped SwiGLU and the experts' biases, in float64 per
// element (rounded once), as the other elementwise ops.

func clampedGLUCheck(op string, c kernels.ClampedGLU, n int) {
	positive(op, n)
	if err := c.Check(); err != nil {
		panic(fmt.Sprintf("cpu.%s: %v", op, err))
	}
}

func (be *Backend) ClampedSwiGLU(out, gate, up kernels.Buffer, n int, c kernels.ClampedGLU) {
	const op = "ClampedSwiGLU"
	clampedGLUCheck(op, c, n)
	os, bf := floatsOut(op, "out", out, n)
	gs := floats(op, "gate", gate, n)
	us := floats(op, "up", up, n)
	alpha, limit := float64(c.Alpha), float64(c.Limit)
	be.parallel(n, 30, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			g := math.Min(float64(gs[i]), limit)
			u := math.Max(math.Min(float64(us[i]), limit), -limit)
			os[i] = roundIf(bf, float32((u+1)*g*logistic(alpha*g)))
		}
	})
}

func (be *Backend) ClampedSwiGLUBackward(dgate, dup, dy, gate, up kernels.Buffer, n int, c kernels.ClampedGLU) {
	const op = "ClampedSwiGLUBackward"
	clampedGLUCheck(op, c, n)
	dg, bg := floatsOut(op, "dgate", dgate, n)
	du, bu := floatsOut(op, "dup", dup, n)
	ds := floats(op, "dy", dy, n)
	gs := floats(op, "gate", gate, n)
	us := floats(op, "up", up, n)
	alpha, limit := float64(c.Alpha), float64(c.Limit)
	be.parallel(n, 40, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			graw, uraw, d := float64(gs[i]), float64(us[i]), float64(ds[i])
			g := math.Min(graw, limit)
			u := math.Max(math.Min(uraw, limit), -limit)
			sig, om := logistic(alpha*g), logistic(-alpha*g) // σ, 1 − σ
			var dgv, duv float64
			if graw <= limit {
				dgv = d * (u + 1) * sig * (1 + alpha*g*om)
			}
			if uraw >= -limit && uraw <= limit {
				duv = d * g * sig
			}
			dg[i], du[i] = roundIf(bg, float32(dgv)), roundIf(bu, float32(duv))
		}
	})
}

func (be *Backend) GroupedAddBias(y, bias, offsets kernels.Buffer, rows, nExperts, cols int) {
	const op = "GroupedAddBias"
	positive(op, nExperts, cols)
	if rows == 0 {
		return
	}
	ys, bf := floatsOut(op, "y", y, rows*cols)
	bs := f32(op, "bias", bias, nExperts*cols)
	off := groupOffsets(op, offsets, nExperts, rows)
	be.parallel(nExperts, rows*cols/nExperts+1, func(lo, hi int) {
		for e := lo; e < hi; e++ {
			b := bs[e*cols : (e+1)*cols]
			for r := int(off[e]); r < int(off[e+1]); r++ {
				yr := ys[r*cols : (r+1)*cols]
				for j := range yr {
					yr[j] = roundIf(bf, yr[j]+b[j])
				}
			}
		}
	})
}
