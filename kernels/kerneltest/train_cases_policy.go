package kerneltest

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// policyCase is one PolicyLoss configuration: its sequences' lengths
// (an empty one included where it matters) and whether oldLogp is logp
// itself, as in one-step training with a behaviour correction (π_old is
// the trainer's own log-probs, with no gradient).
type policyCase struct {
	name     string
	p        kernels.PolicyLossParams
	lens     []int
	aliasOld bool
}

func policyCases() []policyCase {
	ppo := kernels.PolicyLossParams{EpsLow: 0.2, EpsHigh: 0.28}
	with := func(p kernels.PolicyLossParams, f func(*kernels.PolicyLossParams)) kernels.PolicyLossParams {
		f(&p)
		return p
	}
	is := func(c kernels.ISCorrection, lo, hi float32) func(*kernels.PolicyLossParams) {
		return func(p *kernels.PolicyLossParams) { p.IS, p.ISMin, p.ISMax = c, lo, hi }
	}
	inf := float32(math.Inf(1))
	gspo := with(ppo, func(p *kernels.PolicyLossParams) { p.Objective, p.EpsLow, p.EpsHigh = kernels.ObjectiveGSPO, 0.2, 0.2 })
	cispo := kernels.PolicyLossParams{Objective: kernels.ObjectiveCISPO, EpsHigh: 2}
	dppo := kernels.PolicyLossParams{Objective: kernels.ObjectiveDPPO, MaskLow: 0.2, MaskHigh: 0.2, AdvTau: 1, KLTau: 1e-3}
	long := []int{1, 18, 0, 300, 7, 600, 74} // 1000 tokens, one sequence longer than a block
	return []policyCase{
		{"ppo", ppo, []int{1}, false},
		{"ppo", ppo, long, false},
		{"ppo,beta", with(ppo, func(p *kernels.PolicyLossParams) { p.EpsHigh, p.Beta = 0.2, 0.04 }), []int{5, 13}, false},
		{"ppo,token_truncate", with(ppo, is(kernels.ISTokenTruncate, 0.5, 2)), long, false},
		{"ppo,token_mask,old=logp", with(ppo, is(kernels.ISTokenMask, 0.5, 2)), long, true},
		{"ppo,sequence_truncate,cap=3", with(ppo, is(kernels.ISSequenceTruncate, 0, 3)), long, true},
		{"ppo,sequence_mask,beta", with(ppo, func(p *kernels.PolicyLossParams) { is(kernels.ISSequenceMask, 0.5, 2)(p); p.Beta = 0.04 }), long, false},
		{"gspo", gspo, long, false},
		{"gspo,beta,token_truncate", with(gspo, func(p *kernels.PolicyLossParams) { is(kernels.ISTokenTruncate, 0, 2)(p); p.Beta = 0.04 }), long, false},
		{"gspo,sequence_mask", with(gspo, is(kernels.ISSequenceMask, 0.5, inf)), long, false},
		{"cispo", cispo, long, false},
		{"cispo,beta,old=logp", with(cispo, func(p *kernels.PolicyLossParams) { p.Beta = 0.04 }), long, true},
		{"cispo,beta,sequence_mask,old=logp", with(cispo, func(p *kernels.PolicyLossParams) { is(kernels.ISSequenceMask, 0.5, 2)(p); p.Beta = 0.04 }), long, true},
		{"dppo", dppo, long, false},
		{"dppo,beta,adv_tau=0.5,kl_tau=0.1", with(dppo, func(p *kernels.PolicyLossParams) { p.Beta, p.AdvTau, p.KLTau, p.MaskLow = 0.04, 0.5, 0.1, 0.3 }), long, false},
	}
}

// policyInputs are a case's operands, built so that no decision lies
// within 0.05 of its boundary (float32 rounding and the finite-difference
// steps never cross one): ratios inside, below and above the clip range
// (PPO per token, GSPO per sequence, CISPO against its cap), corrections
// ρ inside, below and above [ISMin, ISMax] (per token or per sequence),
// and DPPO probability shifts inside and outside the band; advantages
// positive, negative and zero (one per sequence under GSPO), and some
// zero weights.
type policyInputs struct {
	logp, old, behaviour, ref, adv, weight []float32
	seqStart                               []int32
}

// spread returns n values of mean m whose deviations, within ±dev, sum
// to zero (a sequence's log-ratios around its mean).
func spread(e *env, n int, m, dev float64) []float64 {
	v, sum := make([]float64, n), 0.0
	for t := range v {
		v[t] = dev * (2*e.rng.Float64() - 1)
		sum += v[t]
	}
	for t := range v {
		v[t] += m - sum/float64(n)
	}
	return v
}

// class draws a value from the inside (c = 0), below (1) or above (2)
// range.
func class(e *env, c int, inside, below, above [2]float64) float64 {
	r := [3][2]float64{inside, below, above}[c%3]
	return r[0] + (r[1]-r[0])*e.rng.Float64()
}

func newPolicyInputs(e *env, pc policyCase) policyInputs {
	p := pc.p
	var in policyInputs
	in.seqStart = []int32{0}
	for i, n := range pc.lens {
		in.seqStart = append(in.seqStart, in.seqStart[i]+int32(n))
		if n == 0 {
			continue
		}
		// Behaviour correction: log ρ per token (its mean per sequence).
		var logRho []float64
		rhoIn, rhoLo, rhoHi := [2]float64{0.6, 1.8}, [2]float64{0.2, 0.45}, [2]float64{2.2, 4}
		if p.ISMax == 3 {
			rhoIn, rhoHi = [2]float64{0.2, 2.8}, [2]float64{3.2, 5}
		}
		if p.IS.Sequence() {
			logRho = spread(e, n, math.Log(class(e, i, rhoIn, rhoLo, rhoHi))/float64(n), 0.3)
		} else {
			logRho = make([]float64, n)
			for t := range logRho {
				logRho[t] = math.Log(class(e, t+i, rhoIn, rhoLo, rhoHi))
				if p.IS == kernels.ISNone {
					logRho[t] = 0.6 * (e.rng.Float64() - 0.5)
				}
			}
		}
		// Trust region: log r per token.
		var logR []float64
		switch p.Objective {
		case kernels.ObjectiveGSPO:
			logR = spread(e, n, math.Log(class(e, i+1, [2]float64{0.85, 1.15}, [2]float64{0.3, 0.75}, [2]float64{1.25, 3})), 0.3)
		default:
			logR = make([]float64, n)
			for t := range logR {
				switch p.Objective {
				case kernels.ObjectivePPO:
					logR[t] = math.Log(class(e, t, [2]float64{0.85, 1.15}, [2]float64{0.3, 0.75}, [2]float64{1.35, 3}))
				case kernels.ObjectiveCISPO:
					logR[t] = math.Log(class(e, t, [2]float64{0.3, 1.9}, [2]float64{0.5, 1}, [2]float64{2.1, 4}))
				}
			}
		}
		for t := 0; t < n; t++ {
			a := 0.0
			switch (t/3 + i) % 3 {
			case 0:
				a = 0.1 + 2*e.rng.Float64()
			case 1:
				a = -0.1 - 2*e.rng.Float64()
			}
			if p.Objective == kernels.ObjectiveGSPO && t > 0 {
				a = float64(in.adv[len(in.adv)-1])
			}
			old := -0.5 - 4*e.rng.Float64()
			lp := old + logR[t]
			bh := old - logRho[t]
			if p.Objective == kernels.ObjectiveDPPO {
				// Probabilities: the behaviour's pb and a shift δ inside,
				// below or above the band (0.2, or 0.3 below).
				var pb, d float64
				switch (t + i) % 3 {
				case 0:
					pb, d = 0.2+0.6*e.rng.Float64(), -0.15+0.3*e.rng.Float64()
				case 1:
					pb, d = 0.55+0.4*e.rng.Float64(), -0.6+0.2*e.rng.Float64()
				default:
					pb, d = 0.05+0.4*e.rng.Float64(), 0.25+0.25*e.rng.Float64()
				}
				d = math.Max(d, 0.02-pb) // stay a probability: ≤ −0.53 still lies below both bands
				bh, lp = math.Log(pb), math.Log(pb+d)
				old = bh
			}
			if pc.aliasOld {
				old = lp
			}
			w := e.rng.Float64()
			if t%7 == 6 {
				w = 0
			}
			in.logp, in.old, in.behaviour = append(in.logp, float32(lp)), append(in.old, float32(old)), append(in.behaviour, float32(bh))
			in.ref = append(in.ref, float32(old+e.rng.Float64()-0.5))
			in.adv, in.weight = append(in.adv, float32(a)), append(in.weight, float32(w))
		}
	}
	return in
}

// policyLossCases check every output against RefPolicyLoss: loss, dlogp,
// mismatch and kl within tolElementwise, the clip and correction
// decisions exactly, and dlogp exactly 0 wherever the reference's is (a
// clipped or masked token without a KL term). The "fd" cases
// differentiate Σ loss on the backend; CISPO's weight is a stop-gradient,
// so its fd case has oldLogp = logp (the weight is then the constant 1,
// as in one-step training) and no correction, which would move with it;
// the other cases keep oldLogp fixed.
func policyLossCases() []Case {
	var cs []Case
	for i, pc := range policyCases() {
		pc, seed := pc, uint64(2800+i)
		n := 0
		for _, l := range pc.lens {
			n += l
		}
		cs = append(cs, trainCase("PolicyLoss", fmt.Sprintf("%s,n=%d,seqs=%d", pc.name, n, len(pc.lens)),
			func(b kernels.Backend, tb kernels.TrainOps) error { return checkPolicyLoss(b, tb, seed, pc) }))
		// An aliased oldLogp moves with logp, and so would the correction.
		fd := len(pc.lens) > 1 && !(pc.aliasOld && pc.p.IS != kernels.ISNone)
		if fd && (pc.p.Objective != kernels.ObjectiveCISPO || pc.aliasOld) {
			cs = append(cs, trainCase("PolicyLoss", fmt.Sprintf("fd,%s,n=%d", pc.name, n),
				func(b kernels.Backend, tb kernels.TrainOps) error { return checkPolicyLossFD(b, tb, seed+100, pc) }))
		}
	}
	return cs
}

type policyOperands struct {
	logp, old, behaviour, ref, adv, weight, seq *operand
	loss, dlogp, clip, isClip, mismatch, kl     *operand
	in                                          kernels.PolicyLossIn
	out                                         kernels.PolicyLossOut
}

func newPolicyOperands(e *env, in policyInputs, pc policyCase) *policyOperands {
	n := len(in.logp)
	o := &policyOperands{
		logp: e.in("logp", in.logp), behaviour: e.in("behaviourLogp", in.behaviour),
		adv: e.in("adv", in.adv), weight: e.in("weight", in.weight), seq: e.ints("seqStart", in.seqStart),
		loss: e.out("loss", nans(n)), dlogp: e.out("dlogp", nans(n)), clip: e.out("clip", nans(n)),
		isClip: e.out("isClip", nans(n)), mismatch: e.out("mismatch", nans(n)),
	}
	o.old = o.logp
	if !pc.aliasOld {
		o.old = e.in("oldLogp", in.old)
	}
	o.in = kernels.PolicyLossIn{Logp: o.logp.view, OldLogp: o.old.view, BehaviourLogp: o.behaviour.view, Adv: o.adv.view,
		Weight: o.weight.view, SeqStart: o.seq.view, N: n, NumSeq: len(in.seqStart) - 1}
	o.out = kernels.PolicyLossOut{Loss: o.loss.view, DLogp: o.dlogp.view, Clip: o.clip.view, ISClip: o.isClip.view, Mismatch: o.mismatch.view}
	if pc.p.Beta != 0 {
		o.ref, o.kl = e.in("refLogp", in.ref), e.out("kl", nans(n))
		o.in.RefLogp, o.out.KL = o.ref.view, o.kl.view
	}
	return o
}

func checkPolicyLoss(b kernels.Backend, tb kernels.TrainOps, seed uint64, pc policyCase) error {
	e := newEnv(b, seed)
	defer e.free()
	in := newPolicyInputs(e, pc)
	o := newPolicyOperands(e, in, pc)
	var ref []float64
	if o.ref != nil {
		ref = o.ref.values()
	}
	want := RefPolicyLoss(o.logp.values(), o.old.values(), o.behaviour.values(), ref, o.adv.values(), o.weight.values(), in.seqStart, pc.p)
	tb.PolicyLoss(o.out, o.in, pc.p)
	if err := e.checkAll(); err != nil {
		return err
	}
	got := o.dlogp.result(b)
	for t, w := range want.DLogp {
		if w == 0 && got[t] != 0 {
			return fmt.Errorf("dlogp[%d] = %g, want exactly 0 (clipped, masked or zero-weight)", t, got[t])
		}
	}
	for _, c := range []struct {
		name string
		op   *operand
		want []float64
	}{{"loss", o.loss, want.Loss}, {"dlogp", o.dlogp, want.DLogp}, {"mismatch", o.mismatch, want.Mismatch}, {"kl", o.kl, want.KL}} {
		if c.op == nil {
			continue
		}
		if err := Compare(c.name, c.op.result(b), c.want, tolElementwise); err != nil {
			return err
		}
	}
	for _, c := range []struct {
		name string
		op   *operand
		want []float64
	}{{"clip", o.clip, want.Clip}, {"isClip", o.isClip, want.ISClip}} {
		for t, v := range c.op.result(b) {
			if float64(v) != c.want[t] {
				return fmt.Errorf("%s[%d] = %g, want %g", c.name, t, v, c.want[t])
			}
		}
	}
	return nil
}

func checkPolicyLossFD(b kernels.Backend, tb kernels.TrainOps, seed uint64, pc policyCase) error {
	e := newEnv(b, seed)
	defer e.free()
	in := newPolicyInputs(e, pc)
	o := newPolicyOperands(e, in, pc)
	tb.PolicyLoss(o.out, o.in, pc.p)
	if err := e.checkAll(); err != nil {
		return err
	}
	ones := make([]float32, len(in.logp))
	for t := range ones {
		ones[t] = 1
	}
	loss := func() (float64, float64, error) {
		tb.PolicyLoss(o.out, o.in, pc.p)
		l, labs := dotLoss(ones, o.loss.result(b))
		return l, labs, b.Sync()
	}
	// h = 1e-3 moves a ratio, a sequence ratio or a probability by 0.3%
	// at most: inside the 0.05 margin.
	return checkFD(e, 1e-3, []fdInput{{op: o.logp, x: in.logp, grad: o.dlogp.result(b)}}, loss)
}
