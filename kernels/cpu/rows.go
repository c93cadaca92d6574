package cpu

import (
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

func (be *Backend) GatherRows(out, table, idx kernels.Buffer, n, cols int) {
	positive("GatherRows", n, cols)
	is := ints("GatherRows", "idx", idx, n)
	tb := floats("GatherRows", "table", table, table.Len())
	index("GatherRows", "idx", is, len(tb)/cols)
	os, bf := floatsOut("GatherRows", "out", out, n*cols)
	be.parallel(n, cols, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			r := int(is[i])
			copy(os[i*cols:(i+1)*cols], tb[r*cols:(r+1)*cols])
			if bf {
				castBF16(os[i*cols:(i+1)*cols], os[i*cols:(i+1)*cols])
			}
		}
	})
}

// RMSNorm accumulates the mean square in float64 so long rows lose nothing.
func (be *Backend) RMSNorm(out, rstd, x, w kernels.Buffer, rows, dim int, eps float32) {
	positive("RMSNorm", rows, dim)
	xs := floats("RMSNorm", "x", x, rows*dim)
	ws := floats("RMSNorm", "w", w, dim)
	os := f32("RMSNorm", "out", out, rows*dim)
	var rs []float32
	if rstd != nil {
		rs = f32("RMSNorm", "rstd", rstd, rows)
	}
	if be.vec != nil {
		be.parallel(rows, dim, func(lo, hi int) {
			var r []float32
			if rs != nil {
				r = rs[lo:hi]
			}
			be.vec.rmsNorm(os[lo*dim:hi*dim], r, xs[lo*dim:hi*dim], ws, hi-lo, eps)
		})
		return
	}
	be.parallel(rows, 3*dim, func(lo, hi int) { rmsNormRows(os, rs, xs, ws, lo, hi, eps) })
}

// rmsNormRows is RMSNorm's plain-Go path over rows [lo, hi); rs may be nil.
func rmsNormRows(os, rs, xs, ws []float32, lo, hi int, eps float32) {
	dim := len(ws)
	for r := lo; r < hi; r++ {
		xr, or := xs[r*dim:(r+1)*dim], os[r*dim:(r+1)*dim]
		ss := 0.0
		for _, v := range xr {
			ss += float64(v) * float64(v)
		}
		inv := 1 / math.Sqrt(ss/float64(dim)+float64(eps))
		for i, v := range xr {
			or[i] = float32(float64(v) * inv * float64(ws[i]))
		}
		if rs != nil {
			rs[r] = float32(inv)
		}
	}
}

// RoPE computes each (token, frequency) angle once and applies it to every
// head. The angle is the float32 product pos·invFreq, as in HF transformers
// (see kerneltest.RopeAngle); the rotation itself is done in float64.
func (be *Backend) RoPE(x, pos, invFreq kernels.Buffer, nTok, nHead, headDim int, inverse bool) {
	positive("RoPE", nTok, nHead, headDim)
	if headDim%2 != 0 {
		panic("cpu.RoPE: headDim must be even")
	}
	half := headDim / 2
	xs := f32("RoPE", "x", x, nTok*nHead*headDim)
	ps := ints("RoPE", "pos", pos, nTok)
	fs := floats("RoPE", "invFreq", invFreq, half)
	be.parallel(nTok, 4*nHead*headDim, func(lo, hi int) {
		sin, cos := make([]float64, half), make([]float64, half)
		for t := lo; t < hi; t++ {
			for i := range half {
				ang := float64(float32(ps[t]) * fs[i])
				if inverse {
					ang = -ang
				}
				sin[i], cos[i] = math.Sincos(ang)
			}
			for h := range nHead {
				row := xs[(t*nHead+h)*headDim : (t*nHead+h+1)*headDim]
				for i := range half {
					x1, x2 := float64(row[i]), float64(row[i+half])
					row[i] = float32(x1*cos[i] - x2*sin[i])
					row[i+half] = float32(x2*cos[i] + x1*sin[i])
				}
			}
		}
	})
}
