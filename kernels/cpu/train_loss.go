package cpu

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

func (be *Backend) PolicyLoss(out kernels.PolicyLossOut, in kernels.PolicyLossIn, p kernels.PolicyLossParams) {
	const op = "PolicyLoss"
	n := in.N
	positive(op, n, in.NumSeq)
	o := policyOut{f32(op, "loss", out.Loss, n), f32(op, "dlogp", out.DLogp, n), f32(op, "clip", out.Clip, n),
		f32(op, "isClip", out.ISClip, n), f32(op, "mismatch", out.Mismatch, n), nil}
	x := policyIn{floats(op, "logp", in.Logp, n), floats(op, "oldLogp", in.OldLogp, n), floats(op, "behaviourLogp", in.BehaviourLogp, n),
		nil, floats(op, "adv", in.Adv, n), floats(op, "weight", in.Weight, n)}
	if p.Beta != 0 {
		if out.KL == nil || in.RefLogp == nil {
			panic(fmt.Sprintf("cpu.PolicyLoss: kl or refLogp is nil but Beta is %v; pass both or set Beta to 0", p.Beta))
		}
		x.ref, o.kl = floats(op, "refLogp", in.RefLogp, n), f32(op, "kl", out.KL, n)
	}
	starts := ints(op, "seqStart", in.SeqStart, in.NumSeq+1)
	for i, s := range starts {
		if (i == 0 && s != 0) || (i > 0 && s < starts[i-1]) || (i == in.NumSeq && int(s) != n) {
			panic(fmt.Sprintf("cpu.PolicyLoss: seqStart %v is not nondecreasing from 0 to n = %d", starts, n))
		}
	}
	for i := range in.NumSeq {
		policySequence(o, x, int(starts[i]), int(starts[i+1]), p)
	}
}

type policyOut struct{ loss, dlogp, clip, isClip, mismatch, kl []float32 }
type policyIn struct{ logp, old, behaviour, ref, adv, weight []float32 }

// policySequence computes one sequence's tokens [lo, hi): its sums
// first (the GSPO mean log-ratio, the sequence correction and Σ
// weight·ρ), then each token, all in float64 as the CUDA kernel does.
func policySequence(o policyOut, x policyIn, lo, hi int, p kernels.PolicyLossParams) {
	if hi == lo {
		return
	}
	var sumLR, sumD, sumWR float64
	for t := lo; t < hi; t++ {
		sumLR += float64(x.logp[t]) - float64(x.old[t])
		sumD += float64(x.old[t]) - float64(x.behaviour[t])
	}
	for t := lo; t < hi; t++ {
		rho, _ := isCorrection(float64(x.old[t])-float64(x.behaviour[t]), sumD, p)
		sumWR += float64(x.weight[t]) * rho
	}
	var gspo, gspoSide, gspoGrad float64
	if p.Objective == kernels.ObjectiveGSPO {
		s := math.Exp(sumLR / float64(hi-lo))
		var d float64
		gspo, d, gspoSide = clippedTerm(s, float64(x.adv[lo]), p)
		gspoGrad = sumWR * d / float64(hi-lo)
	}
	beta := float64(p.Beta)
	for t := lo; t < hi; t++ {
		lp, a, w := float64(x.logp[t]), float64(x.adv[t]), float64(x.weight[t])
		rho, isSide := isCorrection(float64(x.old[t])-float64(x.behaviour[t]), sumD, p)
		var pg, dpg, side float64
		switch p.Objective {
		case kernels.ObjectivePPO:
			pg, dpg, side = clippedTerm(math.Exp(lp-float64(x.old[t])), a, p)
		case kernels.ObjectiveGSPO:
			pg, side = gspo, gspoSide
		case kernels.ObjectiveCISPO:
			c := math.Min(math.Exp(lp-float64(x.old[t])), float64(p.EpsHigh))
			if c < math.Exp(lp-float64(x.old[t])) {
				side = 1
			}
			pg, dpg = -c*a*lp, -c*a
		case kernels.ObjectiveDPPO:
			pg, dpg, side = dppoTerm(lp, float64(x.behaviour[t]), a, p)
		}
		lb := lp - float64(x.behaviour[t])
		o.mismatch[t] = float32(math.Exp(lb) - lb - 1)
		o.clip[t], o.isClip[t] = float32(side), float32(isSide)
		var kl, dkl float64
		if x.ref != nil {
			d := float64(x.ref[t]) - lp
			kl, dkl = math.Exp(d)-d-1, 1-math.Exp(d)
			o.kl[t] = float32(kl)
		}
		o.loss[t] = float32(w * (rho*pg + beta*kl))
		if p.Objective == kernels.ObjectiveGSPO {
			o.dlogp[t] = float32(gspoGrad + w*beta*dkl)
		} else {
			o.dlogp[t] = float32(w * (rho*dpg + beta*dkl))
		}
	}
}

// clippedTerm is PPO's −min(r·a, clip(r)·a), its derivative in log r
// (0 where the clip is active) and the side the clip cuts (±1).
func clippedTerm(r, a float64, p kernels.PolicyLossParams) (pg, dpg, side float64) {
	lo, hi := 1-float64(p.EpsLow), 1+float64(p.EpsHigh)
	clipped := min(max(r, lo), hi)
	if r*a <= clipped*a {
		return -r * a, -r * a, 0
	}
	if r < lo {
		return -clipped * a, 0, -1
	}
	return -clipped * a, 0, 1
}

// isCorrection is the behaviour correction ρ for a token with log-ratio
// d (old − behaviour) in a sequence whose log-ratios sum to sumD, and the
// side it was cut on.
func isCorrection(d, sumD float64, p kernels.PolicyLossParams) (float64, float64) {
	if p.IS == kernels.ISNone {
		return 1, 0
	}
	if p.IS.Sequence() {
		d = sumD
	}
	rho, lo, hi := math.Exp(d), float64(p.ISMin), float64(p.ISMax)
	side := 0.0
	if rho > hi {
		side = 1
	} else if rho < lo {
		side = -1
	}
	if side == 0 {
		return rho, 0
	}
	if p.IS == kernels.ISTokenMask || p.IS == kernels.ISSequenceMask {
		return 0, side
	}
	return min(max(rho, lo), hi), side
}

// dppoTerm is prime-rl's default loss for one token: the importance
// weighted advantage, dropped where the probability moved out of the
// band in the advantage's direction, plus kl_tau·(logp − behaviour)².
func dppoTerm(lp, bh, a float64, p kernels.PolicyLossParams) (pg, dpg, side float64) {
	lb := lp - bh
	r, dp := math.Exp(lb), math.Exp(lp)-math.Exp(bh)
	keep := 1.0
	if a > 0 && dp > float64(p.MaskHigh) {
		keep, side = 0, 1
	} else if a <= 0 && dp < -float64(p.MaskLow) {
		keep, side = 0, -1
	}
	aa, k := float64(p.AdvTau)*a, float64(p.KLTau)
	return -keep*aa*r + k*lb*lb, -keep*aa*r + 2*k*lb, side
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
