package kerneltest

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// logSoftmaxGatherBackwardCases cover vocab 1 (gradient exactly 0), odd
// vocab sizes, logits up to ±100 (exp without max-subtraction overflows), a
// Llama-sized vocab, targets at both ends of the row and a row with
// dlogp = 0 (a masked token).
func logSoftmaxGatherBackwardCases() []Case {
	type shape struct {
		rows, vocab int
		scale       float64
	}
	var cs []Case
	for i, s := range []shape{{1, 1, 1}, {3, 7, 1}, {5, 1003, 3}, {4, 1003, 100}, {2, 32003, 5}} {
		s, seed := s, uint64(2700+i)
		cs = append(cs, trainCase("LogSoftmaxGatherBackward", fmt.Sprintf("rows=%d,vocab=%d,scale=%g", s.rows, s.vocab, s.scale),
			func(b kernels.Backend, tb kernels.TrainOps) error {
				e := newEnv(b, seed)
				defer e.free()
				tv := lsgTargets(e, s.rows, s.vocab)
				dv := e.uniform(s.rows, 1)
				if s.rows > 2 {
					dv[2] = 0
				}
				logits, target, dlogp := e.in("logits", e.uniform(s.rows*s.vocab, s.scale)), e.ints("target", tv), e.in("dlogp", dv)
				dl := e.out("dlogits", nans(s.rows*s.vocab))
				want := RefLogSoftmaxGatherBackward(dlogp.values(), logits.values(), tv, s.rows, s.vocab)
				tb.LogSoftmaxGatherBackward(dl.view, dlogp.view, logits.view, target.view, s.rows, s.vocab)
				if err := e.checkAll(); err != nil {
					return err
				}
				return Compare("dlogits", dl.result(b), want, tolReduction)
			}))
	}
	for i, s := range []shape{{3, 50, 3}, {2, 1003, 5}} {
		s, seed := s, uint64(2750+i)
		cs = append(cs, trainCase("LogSoftmaxGatherBackward", fmt.Sprintf("fd,rows=%d,vocab=%d,scale=%g", s.rows, s.vocab, s.scale),
			func(b kernels.Backend, tb kernels.TrainOps) error {
				e := newEnv(b, seed)
				defer e.free()
				tv := lsgTargets(e, s.rows, s.vocab)
				lv, r := e.uniform(s.rows*s.vocab, s.scale), e.uniform(s.rows, 1)
				logits, target, dlogp := e.in("logits", lv), e.ints("target", tv), e.in("dlogp", r)
				logp, dl := e.out("logp", nans(s.rows)), e.out("dlogits", nans(s.rows*s.vocab))
				tb.LogSoftmaxGatherBackward(dl.view, dlogp.view, logits.view, target.view, s.rows, s.vocab)
				if err := e.checkAll(); err != nil {
					return err
				}
				loss := func() (float64, float64, error) {
					b.LogSoftmaxGather(logp.view, nil, logits.view, target.view, s.rows, s.vocab)
					l, labs := dotLoss(r, logp.result(b))
					return l, labs, b.Sync()
				}
				return checkFD(e, 1e-2, []fdInput{{op: logits, x: lv, grad: dl.result(b)}}, loss)
			}))
	}
	return cs
}

// lsgTargets are random targets with the last and first vocab entries
// used by rows 0 and 1.
func lsgTargets(e *env, rows, vocab int) []int32 {
	tv := make([]int32, rows)
	for r := range tv {
		tv[r] = int32(e.rng.IntN(vocab))
	}
	tv[0] = int32(vocab - 1)
	if rows > 1 {
		tv[1] = 0
	}
	return tv
}

// policyInputs are tokens whose ratios lie inside, below and above the
// clip range [0.8, 1.2] (or [0.8, 1.28]) with a margin of at least 0.05,
// so float32 rounding and finite-difference steps never cross a boundary,
// with positive, negative and zero advantages, and some zero weights
// (masked tokens).
type policyInputs struct {
	logp, old, ref, adv, weight []float32
}

func newPolicyInputs(e *env, n int) policyInputs {
	p := policyInputs{make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)}
	for t := 0; t < n; t++ {
		var ratio float64
		switch t % 3 {
		case 0:
			ratio = 0.85 + 0.3*e.rng.Float64() // inside
		case 1:
			ratio = 0.3 + 0.45*e.rng.Float64() // below
		default:
			ratio = 1.35 + 1.65*e.rng.Float64() // above
		}
		old := -0.5 - 5.5*e.rng.Float64()
		p.old[t] = float32(old)
		p.logp[t] = float32(old + math.Log(ratio))
		p.ref[t] = float32(old + e.rng.Float64() - 0.5)
		switch (t / 3) % 3 { // advantage sign cycles independently of the ratio class
		case 0:
			p.adv[t] = float32(0.1 + 2*e.rng.Float64())
		case 1:
			p.adv[t] = float32(-0.1 - 2*e.rng.Float64())
		}
		p.weight[t] = float32(e.rng.Float64())
		if t%7 == 6 {
			p.weight[t] = 0
		}
	}
	return p
}

// policyLossCases check loss and dlogp against the reference, with and
// without the KL term (refLogp and kl nil when Beta is 0), and that dlogp
// is exactly 0 for every token whose clipped term is the minimum outside
// the clip range (and for zero advantage or weight) when Beta is 0; the
// per-token metrics too: kl within tolElementwise, clip exactly (no ratio
// lies within 0.05 of a boundary). The "fd" cases differentiate Σ loss on
// the backend.
func policyLossCases() []Case {
	params := []kernels.PolicyLossParams{
		{EpsLow: 0.2, EpsHigh: 0.28},
		{EpsLow: 0.2, EpsHigh: 0.2, Beta: 0.04},
	}
	var cs []Case
	for i, n := range []int{1, 18, 1000} {
		for j, p := range params {
			n, p, seed := n, p, uint64(2800+10*i+j)
			cs = append(cs, trainCase("PolicyLoss", fmt.Sprintf("n=%d,eps=[%g,%g],beta=%g", n, p.EpsLow, p.EpsHigh, p.Beta),
				func(b kernels.Backend, tb kernels.TrainOps) error { return checkPolicyLoss(b, tb, seed, n, p) }))
		}
	}
	for j, p := range params {
		n, p, seed := 90, p, uint64(2850+j)
		cs = append(cs, trainCase("PolicyLoss", fmt.Sprintf("fd,n=%d,eps=[%g,%g],beta=%g", n, p.EpsLow, p.EpsHigh, p.Beta),
			func(b kernels.Backend, tb kernels.TrainOps) error { return checkPolicyLossFD(b, tb, seed, n, p) }))
	}
	return cs
}

type policyOperands struct {
	logp, old, ref, adv, weight, loss, dlogp, kl, clip *operand
	refBuf, klBuf                                      kernels.Buffer
}

func newPolicyOperands(e *env, in policyInputs, p kernels.PolicyLossParams) *policyOperands {
	n := len(in.logp)
	o := &policyOperands{
		logp: e.in("logp", in.logp), old: e.in("oldLogp", in.old),
		adv: e.in("adv", in.adv), weight: e.in("weight", in.weight),
		loss: e.out("loss", nans(n)), dlogp: e.out("dlogp", nans(n)), clip: e.out("clip", nans(n)),
	}
	if p.Beta != 0 {
		o.ref, o.kl = e.in("refLogp", in.ref), e.out("kl", nans(n))
		o.refBuf, o.klBuf = o.ref.view, o.kl.view
	}
	return o
}

func (o *policyOperands) run(tb kernels.TrainOps, n int, p kernels.PolicyLossParams) {
	tb.PolicyLoss(o.loss.view, o.dlogp.view, o.klBuf, o.clip.view, o.logp.view, o.old.view, o.refBuf, o.adv.view, o.weight.view, n, p)
}

func checkPolicyLoss(b kernels.Backend, tb kernels.TrainOps, seed uint64, n int, p kernels.PolicyLossParams) error {
	e := newEnv(b, seed)
	defer e.free()
	o := newPolicyOperands(e, newPolicyInputs(e, n), p)
	var ref []float64
	if o.ref != nil {
		ref = o.ref.values()
	}
	wantLoss, wantD := RefPolicyLoss(o.logp.values(), o.old.values(), ref, o.adv.values(), o.weight.values(), p)
	o.run(tb, n, p)
	if err := e.checkAll(); err != nil {
		return err
	}
	got := o.dlogp.result(b)
	if p.Beta == 0 {
		for t, w := range wantD {
			if w == 0 && got[t] != 0 {
				return fmt.Errorf("dlogp[%d] = %g, want exactly 0 (ratio %.4g, adv %.4g, weight %.4g: clipped or masked)",
					t, got[t], math.Exp(o.logp.values()[t]-o.old.values()[t]), o.adv.values()[t], o.weight.values()[t])
			}
		}
	}
	if err := Compare("loss", o.loss.result(b), wantLoss, tolElementwise); err != nil {
		return err
	}
	if err := Compare("dlogp", got, wantD, tolElementwise); err != nil {
		return err
	}
	wantKL, wantClip := RefPolicyLossMetrics(o.logp.values(), o.old.values(), ref, o.adv.values(), p)
	for t, c := range o.clip.result(b) {
		if float64(c) != wantClip[t] {
			return fmt.Errorf("clip[%d] = %g, want %g (ratio %.4g, adv %.4g)", t, c, wantClip[t], math.Exp(o.logp.values()[t]-o.old.values()[t]), o.adv.values()[t])
		}
	}
	if o.kl == nil {
		return nil
	}
	return Compare("kl", o.kl.result(b), wantKL, tolElementwise)
}

func checkPolicyLossFD(b kernels.Backend, tb kernels.TrainOps, seed uint64, n int, p kernels.PolicyLossParams) error {
	e := newEnv(b, seed)
	defer e.free()
	in := newPolicyInputs(e, n)
	o := newPolicyOperands(e, in, p)
	o.run(tb, n, p)
	if err := e.checkAll(); err != nil {
		return err
	}
	ones := make([]float32, n)
	for t := range ones {
		ones[t] = 1
	}
	loss := func() (float64, float64, error) {
		o.run(tb, n, p)
		l, labs := dotLoss(ones, o.loss.result(b))
		return l, labs, b.Sync()
	}
	// h = 1e-3 moves a ratio by ~0.3% at most: inside the 0.05 margin.
	return checkFD(e, 1e-3, []fdInput{{op: o.logp, x: in.logp, grad: o.dlogp.result(b)}}, loss)
}

// adamWCases take three steps on each case (fresh state from Step 1, or
// resumed state from Step 100) with a new gradient each step, including
// zero gradients and gradients of 1e-10 whose update eps dominates, and
// compare parameters and both moments with a float64 loop. One case uses
// lr 0.1, weight decay 0.5, where applying the decay after the Adam update
// instead of before changes p by ~5e-3.
func adamWCases() []Case {
	type shape struct {
		n       int
		p       kernels.AdamWParams
		resumed bool
	}
	shapes := []shape{
		{1, kernels.AdamWParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, Step: 1}, false},
		{7, kernels.AdamWParams{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.5, Step: 1}, false},
		{1000, kernels.AdamWParams{LR: 2e-4, Beta1: 0.9, Beta2: 0.99, Eps: 1e-6, WeightDecay: 0.1, Step: 1}, false},
		{1000, kernels.AdamWParams{LR: 1e-3, Beta1: 0.8, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0, Step: 100}, true},
	}
	var cs []Case
	for i, s := range shapes {
		s, seed := s, uint64(3000+i)
		cs = append(cs, trainCase("AdamW", fmt.Sprintf("n=%d,lr=%g,betas=(%g,%g),eps=%g,wd=%g,steps=%d..%d",
			s.n, s.p.LR, s.p.Beta1, s.p.Beta2, s.p.Eps, s.p.WeightDecay, s.p.Step, s.p.Step+2),
			func(b kernels.Backend, tb kernels.TrainOps) error {
				e := newEnv(b, seed)
				defer e.free()
				mInit, vInit := make([]float32, s.n), make([]float32, s.n)
				if s.resumed {
					mInit = e.uniform(s.n, 0.1)
					vInit = e.uniform(s.n, 0.01)
					for j := range vInit {
						vInit[j] = vInit[j] * vInit[j]
					}
				}
				param, m, v := e.out("param", e.uniform(s.n, 1)), e.out("m", mInit), e.out("v", vInit)
				wantP, wantM, wantV := param.values(), m.values(), v.values()
				p := s.p
				for step := 0; step < 3; step++ {
					gv := e.uniform(s.n, 1)
					for j := range gv {
						switch (j + step) % 5 {
						case 3:
							gv[j] = 0
						case 4:
							gv[j] *= 1e-10
						}
					}
					grad := e.in(fmt.Sprintf("grad(step %d)", p.Step), gv)
					RefAdamW(wantP, grad.values(), wantM, wantV, p)
					tb.AdamW(param.view, grad.view, m.view, v.view, s.n, p)
					p.Step++
				}
				if err := e.checkAll(); err != nil {
					return err
				}
				if err := Compare("param", param.result(b), wantP, tolElementwise); err != nil {
					return err
				}
				if err := Compare("m", m.result(b), wantM, tolElementwise); err != nil {
					return err
				}
				return Compare("v", v.result(b), wantV, tolElementwise)
			}))
	}
	return cs
}
