package cpu

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// The fused ops (kernels.FusedOps) do their steps row by row within one
// parallel pass, so a row is still in cache for the step after the first;
// each step is the unfused op's own code (C kernels or plain Go).

// bf16 returns the first n elements of a BF16 output operand (stored as
// float32 holding bf16 values, like every BF16 buffer of this backend).
func bf16(op, name string, b kernels.Buffer, n int) []float32 {
	if b.DType() != kernels.BF16 {
		panic(fmt.Sprintf("cpu.%s: %s is %v, want bf16", op, name, b.DType()))
	}
	return floats(op, name, b, n)
}

// castBF16 stores src rounded to bf16 in dst.
func castBF16(dst, src []float32) {
	for i, v := range src {
		dst[i] = roundBF16(v)
	}
}

// outputs returns a fused op's f32 output and its bf16 copy (nil where
// absent; not both). Without the f32 output the op writes its f32 values
// into the bf16 copy's storage (f32 holding bf16 values) and rounds them
// there in place: what the GPU stores, with nothing allocated.
func outputs(op string, out, outBF16 kernels.Buffer, n int) (os, cs []float32) {
	if out == nil && outBF16 == nil {
		panic(fmt.Sprintf("cpu.%s: out and outBF16 are both nil", op))
	}
	if outBF16 != nil {
		cs = bf16(op, "outBF16", outBF16, n)
	}
	if out == nil {
		return cs, cs
	}
	return f32(op, "out", out, n), cs
}

// AddRMSNorm reads a BF16 r as its stored (bf16-rounded) f32 values.
func (be *Backend) AddRMSNorm(sum, out, outBF16, rstd, x, r, w kernels.Buffer, rows, dim int, eps float32) {
	const op = "AddRMSNorm"
	positive(op, rows, dim)
	n := rows * dim
	xs, ws := floats(op, "x", x, n), floats(op, "w", w, dim)
	os, cs := outputs(op, out, outBF16, n)
	var ss, rv, rs []float32
	if (r == nil) != (sum == nil) {
		panic(fmt.Sprintf("cpu.%s: sum and r must both be set or both nil", op))
	}
	if r != nil {
		rv, ss = floats(op, "r", r, n), f32(op, "sum", sum, n)
	}
	if rstd != nil {
		rs = f32(op, "rstd", rstd, rows)
	}
	be.parallel(rows, 4*dim, func(lo, hi int) {
		a, b := lo*dim, hi*dim
		src := xs
		if rv != nil {
			src = ss
			if be.vec != nil {
				be.vec.add(ss[a:b], xs[a:b], rv[a:b])
			} else {
				for i := a; i < b; i++ {
					ss[i] = xs[i] + rv[i]
				}
			}
		}
		if be.vec != nil {
			var rr []float32
			if rs != nil {
				rr = rs[lo:hi]
			}
			be.vec.rmsNorm(os[a:b], rr, src[a:b], ws, hi-lo, eps)
		} else {
			rmsNormRows(os, rs, src, ws, lo, hi, eps)
		}
		if cs != nil {
			castBF16(cs[a:b], os[a:b])
		}
	})
}

// SwiGLURows reads a BF16 gateUp as its stored values.
func (be *Backend) SwiGLURows(out, outBF16, gateUp kernels.Buffer, rows, width int) {
	const op = "SwiGLURows"
	positive(op, rows, width)
	os, cs := outputs(op, out, outBF16, rows*width)
	gu := floats(op, "gateUp", gateUp, rows*2*width)
	be.parallel(rows, 20*width, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			o, g, u := os[r*width:(r+1)*width], gu[r*2*width:(2*r+1)*width], gu[(2*r+1)*width:(2*r+2)*width]
			if be.vec != nil {
				be.vec.swiGLU(o, g, u)
			} else {
				for i := range o {
					gv := float64(g[i])
					o[i] = float32(gv / (1 + math.Exp(-gv)) * float64(u[i]))
				}
			}
			if cs != nil {
				castBF16(cs[r*width:(r+1)*width], o)
			}
		}
	})
}

// SwiGLURowsBackward reads BF16 dy and gateUp as their stored values; a
// BF16 dGateUp gets each row's f32 gradients rounded to bf16 in place, as
// the GPU's swiglu_rows_backward_f32_dbf16 stores them.
func (be *Backend) SwiGLURowsBackward(dGateUp, dy, gateUp kernels.Buffer, rows, width int) {
	const op = "SwiGLURowsBackward"
	positive(op, rows, width)
	d := floats(op, "dGateUp", dGateUp, rows*2*width)
	round := dGateUp.DType() == kernels.BF16
	ys := floats(op, "dy", dy, rows*width)
	gu := floats(op, "gateUp", gateUp, rows*2*width)
	be.parallel(rows, 30*width, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			g, u := gu[r*2*width:(2*r+1)*width], gu[(2*r+1)*width:(2*r+2)*width]
			dg, du := d[r*2*width:(2*r+1)*width], d[(2*r+1)*width:(2*r+2)*width]
			y := ys[r*width : (r+1)*width]
			if be.vec != nil {
				be.vec.swiGLUBackward(dg, du, y, g, u)
			} else {
				for i := range y {
					gv, uv, dv := float64(g[i]), float64(u[i]), float64(y[i])
					sig := 1 / (1 + math.Exp(-gv))
					dg[i] = float32(dv * uv * sig * (1 + gv*(1-sig)))
					du[i] = float32(dv * gv * sig)
				}
			}
			if round {
				row := d[r*2*width : (r+1)*2*width]
				castBF16(row, row)
			}
		}
	})
}
