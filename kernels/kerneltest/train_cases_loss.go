package kerneltest

import (
	"fmt"

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
	// A BF16 dlogits (the LM head's bf16 backward GEMM's A): each
	// gradient the bf16 rounding of one within tolReduction of the
	// reference; row 2 has dlogp = 0.
	for i, s := range []shape{{3, 7, 1}, {4, 1003, 100}, {2, 32003, 5}} {
		s, seed := s, uint64(2720+i)
		cs = append(cs, trainCase("LogSoftmaxGatherBackward", fmt.Sprintf("rows=%d,vocab=%d,scale=%g,dlogits=bf16", s.rows, s.vocab, s.scale),
			func(b kernels.Backend, tb kernels.TrainOps) error {
				e := newEnv(b, seed)
				defer e.free()
				tv := lsgTargets(e, s.rows, s.vocab)
				dv := e.uniform(s.rows, 1)
				if s.rows > 2 {
					dv[2] = 0
				}
				logits, target, dlogp := e.in("logits", e.uniform(s.rows*s.vocab, s.scale)), e.ints("target", tv), e.in("dlogp", dv)
				dl := e.floats("dlogits", kernels.BF16, nans(s.rows*s.vocab), false)
				want := RefLogSoftmaxGatherBackward(dlogp.values(), logits.values(), tv, s.rows, s.vocab)
				tb.LogSoftmaxGatherBackward(dl.view, dlogp.view, logits.view, target.view, s.rows, s.vocab)
				if err := e.checkAll(); err != nil {
					return err
				}
				got := dl.result(b)
				for i, g := range got {
					if RoundBF16(g) != g {
						return fmt.Errorf("dlogits[%d] = %.8g is not a bf16 value", i, g)
					}
				}
				return CompareBF16("dlogits", got, want, tolReduction)
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
