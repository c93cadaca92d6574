package cpu

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// The grouped gated norm that ends a Mamba-2 layer (kernels.SSMOps): one
// (row, group) per loop, sums in float64 rounded once, as GatedRMSNorm.
// x, z, out, dy, dx and dz may be BF16: a BF16 output is rounded once at
// its store.

func silu64(z float32) float64 { return float64(z) * sigmoid64(float64(z)) }

func groupShape(op string, rows, dim, groups int) int {
	positive(op, rows, dim, groups)
	if dim%groups != 0 {
		panic(fmt.Sprintf("cpu.%s: dim %d not a multiple of groups %d", op, dim, groups))
	}
	return dim / groups
}

func (be *Backend) GroupedGatedRMSNorm(out, rstd, x, z, w kernels.Buffer, rows, dim, groups int, eps float32) {
	const op = "GroupedGatedRMSNorm"
	gs := groupShape(op, rows, dim, groups)
	o, obf := floatsOut(op, "out", out, rows*dim)
	xs, zs := floats(op, "x", x, rows*dim), floats(op, "z", z, rows*dim)
	ws := floats(op, "w", w, dim)
	var rs []float32
	if rstd != nil {
		rs = f32(op, "rstd", rstd, rows*groups)
	}
	be.parallel(rows*groups, 4*gs, func(lo, hi int) {
		u := make([]float32, gs)
		for b := lo; b < hi; b++ {
			at, wk := b*gs, ws[(b%groups)*gs:(b%groups+1)*gs]
			var ss float64
			for i := range u {
				u[i] = xs[at+i] * silu(zs[at+i])
				ss += float64(u[i]) * float64(u[i])
			}
			inv := float32(1 / math.Sqrt(ss/float64(gs)+float64(eps)))
			if rs != nil {
				rs[b] = inv
			}
			for i, ui := range u { // out may alias x: x was read into u
				o[at+i] = roundIf(obf, wk[i]*(ui*inv))
			}
		}
	})
}

func (be *Backend) GroupedGatedRMSNormBackward(dx, dz, dy, x, z, w, rstd kernels.Buffer, rows, dim, groups int) {
	const op = "GroupedGatedRMSNormBackward"
	gs := groupShape(op, rows, dim, groups)
	dxs, dxbf := floatsOut(op, "dx", dx, rows*dim)
	dzs, dzbf := floatsOut(op, "dz", dz, rows*dim)
	dys := floats(op, "dy", dy, rows*dim)
	xs, zs := floats(op, "x", x, rows*dim), floats(op, "z", z, rows*dim)
	ws, rs := floats(op, "w", w, dim), floats(op, "rstd", rstd, rows*groups)
	be.parallel(rows*groups, 8*gs, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			at, wk, inv := b*gs, ws[(b%groups)*gs:(b%groups+1)*gs], float64(rs[b])
			// With u = x·silu(z) and dn = dy·w: du = r·dn − u·r³·(1/gs)·Σ dn·u.
			// silu in float64, unrounded: the two terms cancel when u·r ≈ 1
			// (a group of one column), and a rounded u then is no u at all.
			var dot float64
			for i := range gs {
				dot += float64(dys[at+i]) * float64(wk[i]) * float64(xs[at+i]) * silu64(zs[at+i])
			}
			c := inv * inv * inv * dot / float64(gs)
			for i := range gs {
				j := at + i
				s := silu64(zs[j])
				du := inv*float64(dys[j])*float64(wk[i]) - float64(xs[j])*s*c
				dxs[j] = roundIf(dxbf, float32(du*s))
				dzs[j] = roundIf(dzbf, float32(du*float64(xs[j])*float64(siluGrad(zs[j]))))
			}
		}
	})
}
