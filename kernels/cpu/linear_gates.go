package cpu

import (
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// The elementwise parts of a DeltaNet layer: its gates and the gated norm
// that ends it. Scalars go through float64 where math does, and are
// rounded once, as the Go path of the other elementwise ops.

func sigmoid64(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func silu(x float32) float32 { return float32(float64(x) * sigmoid64(float64(x))) }

// siluGrad is silu'(x) = σ(x)·(1 + x·(1 − σ(x))).
func siluGrad(x float32) float32 {
	s := sigmoid64(float64(x))
	return float32(s * (1 + float64(x)*(1-s)))
}

// softplus is torch's: linear above 20.
func softplus(x float64) float64 {
	if x > 20 {
		return x
	}
	return math.Log1p(math.Exp(x))
}

func (be *Backend) DeltaGates(g, beta, a, b, aLog, dtBias kernels.Buffer, rows, heads int) {
	const op = "DeltaGates"
	positive(op, rows, heads)
	n := rows * heads
	gs, bs := f32(op, "g", g, n), f32(op, "beta", beta, n)
	as, bv := floats(op, "a", a, n), floats(op, "b", b, n)
	al, dt := floats(op, "aLog", aLog, heads), floats(op, "dtBias", dtBias, heads)
	be.parallel(rows, heads*8, func(lo, hi int) {
		for i := lo * heads; i < hi*heads; i++ {
			h := i % heads
			gs[i] = float32(-math.Exp(float64(al[h])) * softplus(float64(as[i])+float64(dt[h])))
			bs[i] = float32(sigmoid64(float64(bv[i])))
		}
	})
}

func (be *Backend) DeltaGatesBackward(da, db, dg, dbeta, a, b, aLog, dtBias kernels.Buffer, rows, heads int) {
	const op = "DeltaGatesBackward"
	positive(op, rows, heads)
	n := rows * heads
	das, dbs := f32(op, "da", da, n), f32(op, "db", db, n)
	dgs, dbetas := floats(op, "dg", dg, n), floats(op, "dbeta", dbeta, n)
	as, bv := floats(op, "a", a, n), floats(op, "b", b, n)
	al, dt := floats(op, "aLog", aLog, heads), floats(op, "dtBias", dtBias, heads)
	be.parallel(rows, heads*8, func(lo, hi int) {
		for i := lo * heads; i < hi*heads; i++ {
			h := i % heads
			x := float64(as[i]) + float64(dt[h])
			sp := 1.0 // softplus' in its linear branch
			if x <= 20 {
				sp = sigmoid64(x)
			}
			das[i] = float32(-float64(dgs[i]) * math.Exp(float64(al[h])) * sp)
			s := sigmoid64(float64(bv[i]))
			dbs[i] = float32(float64(dbetas[i]) * s * (1 - s))
		}
	})
}

func (be *Backend) GatedRMSNorm(out, rstd, x, z, w kernels.Buffer, rows, dim int, eps float32) {
	const op = "GatedRMSNorm"
	positive(op, rows, dim)
	o, obf := floatsOut(op, "out", out, rows*dim)
	xs, zs := floats(op, "x", x, rows*dim), floats(op, "z", z, rows*dim)
	ws := floats(op, "w", w, dim)
	var rs []float32
	if rstd != nil {
		rs = f32(op, "rstd", rstd, rows)
	}
	be.parallel(rows, 4*dim, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, zr, or := xs[r*dim:(r+1)*dim], zs[r*dim:(r+1)*dim], o[r*dim:(r+1)*dim]
			var ss float64
			for _, v := range xr {
				ss += float64(v) * float64(v)
			}
			inv := float32(1 / math.Sqrt(ss/float64(dim)+float64(eps)))
			if rs != nil {
				rs[r] = inv
			}
			for i := range xr { // out may alias x: each element read before it is written
				or[i] = roundIf(obf, ws[i]*(xr[i]*inv)*silu(zr[i]))
			}
		}
	})
}

func (be *Backend) GatedRMSNormBackward(dx, dz, dy, x, z, w, rstd kernels.Buffer, rows, dim int) {
	const op = "GatedRMSNormBackward"
	positive(op, rows, dim)
	dxs, xbf := floatsOut(op, "dx", dx, rows*dim)
	dzs, zbf := floatsOut(op, "dz", dz, rows*dim)
	dys := floats(op, "dy", dy, rows*dim)
	xs, zs := floats(op, "x", x, rows*dim), floats(op, "z", z, rows*dim)
	ws, rs := floats(op, "w", w, dim), floats(op, "rstd", rstd, rows)
	be.parallel(rows, 8*dim, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := r * dim
			inv := float64(rs[r])
			// dn = dy·w·silu(z) is the gradient of the normalised row.
			var dot float64
			for i := range dim {
				dot += float64(dys[row+i]) * float64(ws[i]) * float64(silu(zs[row+i])) * float64(xs[row+i])
			}
			c := inv * inv * inv * dot / float64(dim)
			for i := range dim {
				j := row + i
				g := float64(dys[j]) * float64(ws[i])
				dzs[j] = roundIf(zbf, float32(g*float64(xs[j])*inv*float64(siluGrad(zs[j]))))
				dxs[j] = roundIf(xbf, float32(inv*g*float64(silu(zs[j]))-float64(xs[j])*c))
			}
		}
	})
}
