package kerneltest

import (
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// PolicyLossRef holds RefPolicyLoss's per-token results (KL nil when
// Beta is 0).
type PolicyLossRef struct {
	Loss, DLogp, Clip, ISClip, Mismatch, KL []float64
}

// RefPolicyLoss is kernels.TrainOps.PolicyLoss in float64, written from
// its contract: each sequence's sums first, then its tokens. refLogp is
// ignored when Beta is 0.
func RefPolicyLoss(logp, old, behaviour, refLogp, adv, weight []float64, seqStart []int32, p kernels.PolicyLossParams) PolicyLossRef {
	n := len(logp)
	r := PolicyLossRef{make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), nil}
	beta := float64(p.Beta)
	if beta != 0 {
		r.KL = make([]float64, n)
	}
	for i := 0; i+1 < len(seqStart); i++ {
		lo, hi := int(seqStart[i]), int(seqStart[i+1])
		rho := make([]float64, hi-lo) // the correction, token by token
		var sumLR, sumD float64
		for t := lo; t < hi; t++ {
			sumLR += logp[t] - old[t]
			sumD += old[t] - behaviour[t]
		}
		for t := lo; t < hi; t++ {
			d := old[t] - behaviour[t]
			if p.IS.Sequence() {
				d = sumD
			}
			rho[t-lo], r.ISClip[t] = refCorrection(d, p)
		}
		var seq gspoTerm
		if p.Objective == kernels.ObjectiveGSPO && hi > lo {
			wr := 0.0
			for t := lo; t < hi; t++ {
				wr += weight[t] * rho[t-lo]
			}
			seq = refGSPO(sumLR/float64(hi-lo), adv[lo], wr, hi-lo, p)
		}
		for t := lo; t < hi; t++ {
			var pg, dpg, side float64
			switch p.Objective {
			case kernels.ObjectivePPO:
				pg, dpg, side = refClippedTerm(math.Exp(logp[t]-old[t]), adv[t], p)
			case kernels.ObjectiveGSPO:
				pg, side = seq.pg, seq.side
			case kernels.ObjectiveCISPO:
				ratio, c := math.Exp(logp[t]-old[t]), float64(p.EpsHigh)
				if ratio > c {
					side = 1
				}
				w := math.Min(ratio, c)
				pg, dpg = -w*adv[t]*logp[t], -w*adv[t]
			case kernels.ObjectiveDPPO:
				pg, dpg, side = refDPPO(logp[t], behaviour[t], adv[t], p)
			}
			lb := logp[t] - behaviour[t]
			r.Mismatch[t] = math.Exp(lb) - lb - 1
			kl, dkl := 0.0, 0.0
			if beta != 0 {
				d := refLogp[t] - logp[t]
				kl, dkl = math.Exp(d)-d-1, 1-math.Exp(d)
				r.KL[t] = kl
			}
			r.Clip[t] = side
			rh := rho[t-lo]
			r.Loss[t] = weight[t] * (rh*pg + beta*kl)
			if p.Objective == kernels.ObjectiveGSPO {
				r.DLogp[t] = seq.dlogp + weight[t]*beta*dkl
			} else {
				r.DLogp[t] = weight[t] * (rh*dpg + beta*dkl)
			}
		}
	}
	return r
}

// refCorrection is ρ for log-ratio d (old − behaviour, summed over the
// sequence in the sequence modes) and the side it was cut on.
func refCorrection(d float64, p kernels.PolicyLossParams) (rho, side float64) {
	if p.IS == kernels.ISNone {
		return 1, 0
	}
	rho = math.Exp(d)
	lo, hi := float64(p.ISMin), float64(p.ISMax)
	switch {
	case rho > hi:
		side = 1
	case rho < lo:
		side = -1
	default:
		return rho, 0
	}
	if p.IS == kernels.ISTokenMask || p.IS == kernels.ISSequenceMask {
		return 0, side
	}
	return math.Min(math.Max(rho, lo), hi), side
}

// gspoTerm is one sequence's GSPO term: pg per token, the clip side, and
// each token's gradient ∂(Σ_seq weight·ρ·pg)/∂logp_t, the same for all.
type gspoTerm struct{ pg, side, dlogp float64 }

// refGSPO: s = exp(meanLR); the clipped term as PPO's; the gradient
// reaches logp_t through the mean, ∂s/∂logp_t = s/n, weighed by wr =
// Σ_seq weight·ρ.
func refGSPO(meanLR, adv, wr float64, n int, p kernels.PolicyLossParams) gspoTerm {
	s := math.Exp(meanLR)
	pg, dpg, side := refClippedTerm(s, adv, p) // dpg = ∂pg/∂log s
	return gspoTerm{pg, side, wr * dpg / float64(n)}
}

// refClippedTerm is pg = −min(ratio·adv, clip(ratio)·adv), its derivative
// in log ratio, and the side (±1) on which the clip is active. Where the
// clipped term is strictly the smaller one the clip is active (inside the
// range both terms are equal) and the gradient is zero.
func refClippedTerm(ratio, adv float64, p kernels.PolicyLossParams) (pg, dpg, side float64) {
	lo, hi := 1-float64(p.EpsLow), 1+float64(p.EpsHigh)
	unclipped := ratio * adv
	clipped := math.Min(math.Max(ratio, lo), hi) * adv
	if clipped < unclipped {
		side = 1
		if ratio < lo {
			side = -1
		}
		return -clipped, 0, side
	}
	return -unclipped, -unclipped, 0 // d(ratio)/d(log ratio) = ratio
}

// refDPPO is prime-rl's default loss for one token: the masked
// importance-weighted advantage plus kl_tau × the squared log-ratio.
func refDPPO(logp, behaviour, adv float64, p kernels.PolicyLossParams) (pg, dpg, side float64) {
	lb := logp - behaviour
	ratio, dp := math.Exp(lb), math.Exp(logp)-math.Exp(behaviour)
	keep := 1.0
	if adv > 0 && dp > float64(p.MaskHigh) {
		keep, side = 0, 1
	} else if adv <= 0 && dp < -float64(p.MaskLow) {
		keep, side = 0, -1
	}
	a, k := float64(p.AdvTau)*adv, float64(p.KLTau)
	return -keep*a*ratio + k*lb*lb, -keep*a*ratio + 2*k*lb, side
}
