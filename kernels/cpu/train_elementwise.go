package cpu

import (
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

var _ kernels.TrainOps = (*Backend)(nil)

func (be *Backend) Fill(x kernels.Buffer, value float32, n int) {
	xs := f32("Fill", "x", x, n)
	for i := range xs {
		xs[i] = value
	}
}

func (be *Backend) Scale(x kernels.Buffer, alpha float32, n int) {
	xs := f32("Scale", "x", x, n)
	be.parallel(n, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			xs[i] *= alpha
		}
	})
}

// SumSquares accumulates in float64 on one goroutine so the result does
// not depend on how work was split.
func (be *Backend) SumSquares(out, x kernels.Buffer, n int) {
	xs := floats("SumSquares", "x", x, n)
	os := f32("SumSquares", "out", out, 1)
	s := 0.0
	for _, v := range xs {
		s += float64(v) * float64(v)
	}
	os[0] = float32(s)
}

// SwiGLUBackward reads gate and up before writing dgate and dup at the same
// index, so the outputs may alias the inputs.
func (be *Backend) SwiGLUBackward(dgate, dup, dy, gate, up kernels.Buffer, n int) {
	const op = "SwiGLUBackward"
	positive(op, n)
	dg, bg := floatsOut(op, "dgate", dgate, n)
	du, bu := floatsOut(op, "dup", dup, n)
	ys, gs, us := floats(op, "dy", dy, n), floats(op, "gate", gate, n), floats(op, "up", up, n)
	if be.vec != nil {
		be.parallel(n, 6, func(lo, hi int) {
			be.vec.swiGLUBackward(dg[lo:hi], du[lo:hi], ys[lo:hi], gs[lo:hi], us[lo:hi])
			if bg {
				castBF16(dg[lo:hi], dg[lo:hi])
			}
			if bu {
				castBF16(du[lo:hi], du[lo:hi])
			}
		})
		return
	}
	be.parallel(n, 30, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			g, u, d := float64(gs[i]), float64(us[i]), float64(ys[i])
			sig := 1 / (1 + math.Exp(-g))
			dg[i] = roundIf(bg, float32(d*u*sig*(1+g*(1-sig))))
			du[i] = roundIf(bu, float32(d*g*sig))
		}
	})
}

// SigmoidGateBackward reads dy, x and gate at an index before writing dx
// and dgate there, so the outputs may alias the inputs. A BF16 output gets
// each gradient rounded once.
func (be *Backend) SigmoidGateBackward(dx, dgate, dy, x, gate kernels.Buffer, n int) {
	const op = "SigmoidGateBackward"
	positive(op, n)
	dxs, bx := floatsOut(op, "dx", dx, n)
	dgs, bg := floatsOut(op, "dgate", dgate, n)
	ys, xs, gs := floats(op, "dy", dy, n), floats(op, "x", x, n), floats(op, "gate", gate, n)
	be.parallel(n, 30, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			d, xv, g := float64(ys[i]), float64(xs[i]), float64(gs[i])
			sig, om := logistic(g), logistic(-g) // σ(g), 1 − σ(g) without cancellation
			dxs[i] = roundIf(bx, float32(d*sig))
			dgs[i] = roundIf(bg, float32(d*xv*sig*om))
		}
	})
}

// RMSNormBackward: with g = w·dy, dx = r·g − x·r³·mean(g·x). Each row is
// read completely before it is written, so dx may alias dy. A BF16 dy is
// read as its stored values; dxBF16 gets the final f32 dx of each chunk
// of rows rounded to bf16, as the GPU's kernel stores it.
func (be *Backend) RMSNormBackward(dx, dxBF16, dy, x, w, rstd kernels.Buffer, rows, dim int, accumulate bool) {
	const op = "RMSNormBackward"
	positive(op, rows, dim)
	dxs := f32(op, "dx", dx, rows*dim)
	var cs []float32
	if dxBF16 != nil {
		cs = bf16(op, "dxBF16", dxBF16, rows*dim)
	}
	dys, xs := floats(op, "dy", dy, rows*dim), floats(op, "x", x, rows*dim)
	ws, rs := floats(op, "w", w, dim), floats(op, "rstd", rstd, rows)
	cost := 4 * dim
	if be.vec != nil {
		cost = dim
	}
	be.parallel(rows, cost, func(lo, hi int) {
		a, b := lo*dim, hi*dim
		if be.vec != nil {
			be.vec.rmsNormBackward(dxs[a:b], dys[a:b], xs[a:b], ws, rs[lo:hi], hi-lo, accumulate)
		} else {
			rmsNormBackwardRows(dxs, dys, xs, ws, rs, lo, hi, accumulate)
		}
		if cs != nil {
			castBF16(cs[a:b], dxs[a:b])
		}
	})
}

// rmsNormBackwardRows is RMSNormBackward's plain-Go path over rows [lo,
// hi), in float64.
func rmsNormBackwardRows(dxs, dys, xs, ws, rs []float32, lo, hi int, accumulate bool) {
	dim := len(ws)
	for r := lo; r < hi; r++ {
		xr, dyr, dxr := xs[r*dim:(r+1)*dim], dys[r*dim:(r+1)*dim], dxs[r*dim:(r+1)*dim]
		dot := 0.0
		for i, v := range xr {
			dot += float64(ws[i]) * float64(dyr[i]) * float64(v)
		}
		inv := float64(rs[r])
		c := inv * inv * inv * dot / float64(dim)
		for i, v := range xr {
			g := inv*float64(ws[i])*float64(dyr[i]) - float64(v)*c
			if accumulate {
				g += float64(dxr[i])
			}
			dxr[i] = float32(g)
		}
	}
}

// LogSoftmaxGatherBackward recomputes each row's softmax (exps in float64
// on the Go path, in float32 on the C one; sums in float64). A BF16
// dlogits gets each row's f32 gradient rounded to bf16, as the GPU's
// log_softmax_gather_backward_bf16 stores it.
func (be *Backend) LogSoftmaxGatherBackward(dlogits, dlogp, logits, target kernels.Buffer, rows, vocab int) {
	const op = "LogSoftmaxGatherBackward"
	positive(op, rows, vocab)
	ds := floats(op, "dlogits", dlogits, rows*vocab)
	if dlogits.DType() == kernels.BF16 {
		defer castBF16(ds, ds)
	}
	gs := floats(op, "dlogp", dlogp, rows)
	xs := floats(op, "logits", logits, rows*vocab)
	ts := ints(op, "target", target, rows)
	index(op, "target", ts, vocab)
	be.parallel(rows, 20*vocab, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row, drow := xs[r*vocab:(r+1)*vocab], ds[r*vocab:(r+1)*vocab]
			g := float64(gs[r])
			if g == 0 {
				clear(drow)
				continue
			}
			if be.vec != nil {
				mx, z, _ := be.vec.lseStats(row)
				be.vec.expScale(drow, row, mx, -g/z)
				drow[ts[r]] += float32(g)
				continue
			}
			mx := row[0]
			for _, v := range row {
				mx = max(mx, v)
			}
			z := 0.0
			for _, v := range row {
				z += expNonPos(float64(v - mx))
			}
			for j, v := range row {
				drow[j] = float32(-g * expNonPos(float64(v-mx)) / z)
			}
			drow[ts[r]] += float32(g)
		}
	})
}
