package kerneltest

import "math"

// RefGroupedGatedRMSNorm returns out and the per-(row, group) 1/rms of
// the Mamba-2 gated norm: u = x·silu(z), each group of dim/groups columns
// normalised on its own, times w.
func RefGroupedGatedRMSNorm(x, z, w []float64, rows, dim, groups int, eps float64) (out, rstd []float64) {
	gs := dim / groups
	out, rstd = make([]float64, rows*dim), make([]float64, rows*groups)
	for b := range rows * groups {
		ss := 0.0
		for i := range gs {
			u := x[b*gs+i] * refSilu(z[b*gs+i])
			ss += u * u
		}
		rstd[b] = 1 / math.Sqrt(ss/float64(gs)+eps)
		for i := range gs {
			j := b*gs + i
			out[j] = w[(b%groups)*gs+i] * x[j] * refSilu(z[j]) * rstd[b]
		}
	}
	return out, rstd
}

// RefGroupedGatedRMSNormBackward returns dx and dz with the forward's
// 1/rms: du = r·dy·w − u·r³·(1/gs)·Σ dy·w·u, dx = du·silu(z),
// dz = du·x·silu'(z).
func RefGroupedGatedRMSNormBackward(dy, x, z, w, rstd []float64, rows, dim, groups int) (dx, dz []float64) {
	gs := dim / groups
	dx, dz = make([]float64, rows*dim), make([]float64, rows*dim)
	for b := range rows * groups {
		r, dot := rstd[b], 0.0
		for i := range gs {
			j := b*gs + i
			dot += dy[j] * w[(b%groups)*gs+i] * x[j] * refSilu(z[j])
		}
		for i := range gs {
			j := b*gs + i
			u := x[j] * refSilu(z[j])
			du := r*dy[j]*w[(b%groups)*gs+i] - u*r*r*r*dot/float64(gs)
			dx[j] = du * refSilu(z[j])
			dz[j] = du * x[j] * refSiluGrad(z[j])
		}
	}
	return dx, dz
}
