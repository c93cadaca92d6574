package cpu

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

func (be *Backend) PolicyLoss(loss, dlogp, kl, clip, logp, oldLogp, refLogp, adv, weight kernels.Buffer, n int, p kernels.PolicyLossParams) {
	const op = "PolicyLoss"
	positive(op, n)
	ls, ds, cs := f32(op, "loss", loss, n), f32(op, "dlogp", dlogp, n), f32(op, "clip", clip, n)
	lp, old := floats(op, "logp", logp, n), floats(op, "oldLogp", oldLogp, n)
	as, ws := floats(op, "adv", adv, n), floats(op, "weight", weight, n)
	var ref, ks []float32
	if p.Beta != 0 {
		if kl == nil {
			panic(fmt.Sprintf("cpu.PolicyLoss: kl is nil but Beta is %v; pass a buffer for the per-token KL or set Beta to 0", p.Beta))
		}
		ref, ks = floats(op, "refLogp", refLogp, n), f32(op, "kl", kl, n)
	}
	lo, hi := 1-float64(p.EpsLow), 1+float64(p.EpsHigh)
	for t := range n {
		a, w := float64(as[t]), float64(ws[t])
		ratio := math.Exp(float64(lp[t]) - float64(old[t]))
		clipped := min(max(ratio, lo), hi)
		var pg, dpg float64
		cs[t] = 0
		if ratio*a <= clipped*a {
			pg, dpg = -ratio*a, -ratio*a // d(−ratio·a)/dlogp
		} else {
			pg = -clipped * a // constant in logp: the clip is active
			cs[t] = 1
			if ratio < lo {
				cs[t] = -1
			}
		}
		if ref != nil {
			d := float64(ref[t]) - float64(lp[t])
			e := math.Exp(d)
			k := e - d - 1
			ks[t] = float32(k)
			pg += float64(p.Beta) * k
			dpg += float64(p.Beta) * (1 - e)
		}
		ls[t] = float32(w * pg)
		ds[t] = float32(w * dpg)
	}
}

func (be *Backend) AdamW(param, grad, m, v kernels.Buffer, n int, p kernels.AdamWParams) {
	const op = "AdamW"
	positive(op, n, p.Step)
	ps, gs := f32(op, "param", param, n), floats(op, "grad", grad, n)
	ms, vs := f32(op, "m", m, n), f32(op, "v", v, n)
	b1, b2 := float64(p.Beta1), float64(p.Beta2)
	c1 := 1 - math.Pow(b1, float64(p.Step))
	c2 := 1 - math.Pow(b2, float64(p.Step))
	lr, wd, eps := float64(p.LR), float64(p.WeightDecay), float64(p.Eps)
	if be.vec != nil {
		be.parallel(n, 5, func(lo, hi int) {
			be.vec.adamW(ps[lo:hi], gs[lo:hi], ms[lo:hi], vs[lo:hi], b1, b2, c1, c2, lr, wd, eps)
		})
		return
	}
	be.parallel(n, 20, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			g := float64(gs[i])
			w := float64(ps[i]) * (1 - lr*wd)
			mi := b1*float64(ms[i]) + (1-b1)*g
			vi := b2*float64(vs[i]) + (1-b2)*g*g
			w -= lr * (mi / c1) / (math.Sqrt(vi/c2) + eps)
			ps[i], ms[i], vs[i] = float32(w), float32(mi), float32(vi)
		}
	})
}
