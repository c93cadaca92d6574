package kerneltest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
)

// The training references are the specification of kernels.TrainOps, so
// they are checked here twice, independently of any backend: against
// values worked out by hand, and (for every backward) against central
// finite differences of the float64 forward reference.

func TestRefSumSquaresByHand(t *testing.T) {
	near(t, "sumsq", []float64{RefSumSquares([]float64{1, -2, 3})}, []float64{14})
}

func TestRefRMSNormBackwardByHand(t *testing.T) {
	// x = (3, 4), w = (1, 2), eps 0.5: r = 1/√13, Σ w·dy·x = 3 + 8 = 11 for
	// dy = (1, 1), so dx = r·(1 − 3·11/26, 2 − 4·11/26) = r·(−7/26, 8/26).
	r := 1 / math.Sqrt(13)
	dx := RefRMSNormBackward([]float64{1, 1}, []float64{3, 4}, []float64{1, 2}, []float64{r}, 1, 2)
	near(t, "dx", dx, []float64{-7 * r / 26, 8 * r / 26})
}

func TestRefSwiGLUBackwardByHand(t *testing.T) {
	// silu'(0) = 1/2, silu(0) = 0; at ±1000 σ is 0 or 1: silu' is 0 or 1
	// and silu is 0 or 1000.
	dg, du := RefSwiGLUBackward([]float64{2, 1, 1}, []float64{0, -1000, 1000}, []float64{3, 5, 7})
	near(t, "dgate", dg, []float64{3, 0, 7})
	near(t, "dup", du, []float64{0, 0, 1000})
}

func TestRefAttentionBackwardByHand(t *testing.T) {
	// headDim 1, scale 1, k = (0, ln 3), v = (10, 20). Token 1 (pos 1, q = 1)
	// has P = (1/4, 3/4), out = 17.5; with dout = 1, dP = v, D = 17.5,
	// dS = (1/4·(−7.5), 3/4·2.5) = (−1.875, 1.875): dq = 1.875·ln 3,
	// dk = dS·q, dv = P. Token 0 (pos 0, q = 5) has P = (1): dS = 0, dv0 += 1.
	k := []float64{0, math.Log(3)}
	v := []float64{10, 20}
	dq, dk, dv := RefAttentionBackward([]float64{1, 1}, []float64{5, 1}, k, v, []int32{0, 0}, []int32{0, 1}, IdentityPages(1, 2), 2, 1, 1, 1, 1)
	near(t, "dq", dq, []float64{0, 1.875 * math.Log(3)})
	near(t, "dk", dk, []float64{-1.875, 1.875})
	near(t, "dv", dv, []float64{1.25, 0.75})
}

func TestRefLogSoftmaxGatherBackwardByHand(t *testing.T) {
	// Rows (0, ln 3) have softmax (1/4, 3/4). Row 0: target 0, dlogp 2 gives
	// 2·(3/4, −3/4); row 1: target 1, dlogp −1 gives −(−1/4, 1/4).
	dl := RefLogSoftmaxGatherBackward([]float64{2, -1}, []float64{0, math.Log(3), 0, math.Log(3)}, []int32{0, 1}, 2, 2)
	near(t, "dlogits", dl, []float64{1.5, -1.5, 0.25, -0.25})
}

func TestRefPolicyLossByHand(t *testing.T) {
	ln2 := math.Log(2)
	one := func(n int) []int32 { return []int32{0, int32(n)} }
	// Clip range [0.75, 1.25] (float32-exact). Tokens: ratio 1 adv 2 weight
	// 0.5; ratio 2 with adv ±1; ratio 1/2 with adv ±1. Where the clipped
	// term is the min (ratio 2, adv 1: 1.25 < 2; ratio 1/2, adv −1: −0.75 <
	// −0.5) the loss is −clip·adv and the gradient 0; otherwise the loss is
	// −ratio·adv and the gradient −ratio·adv·weight.
	logp := []float64{-1, -1 + ln2, -1 + ln2, -1 - ln2, -1 - ln2}
	old := []float64{-1, -1, -1, -1, -1}
	adv := []float64{2, 1, -1, 1, -1}
	w := []float64{0.5, 1, 1, 1, 1}
	ppo := kernels.PolicyLossParams{EpsLow: 0.25, EpsHigh: 0.25}
	r := RefPolicyLoss(logp, old, old, nil, adv, w, one(5), ppo)
	near(t, "loss", r.Loss, []float64{-1, -1.25, 2, -0.5, 0.75})
	near(t, "dlogp", r.DLogp, []float64{-1, 0, 2, -0.5, 0})
	near(t, "clip", r.Clip, []float64{0, 1, 0, 0, -1})
	// k3 KL with refLogp − logp = ln 2: kl = 2 − ln 2 − 1, ∂kl/∂logp = 1 − 2.
	kl := ppo
	kl.Beta = 0.125
	r = RefPolicyLoss([]float64{-1}, []float64{-1}, []float64{-1}, []float64{-1 + ln2}, []float64{0}, []float64{1}, one(1), kl)
	near(t, "kl loss", r.Loss, []float64{0.125 * (1 - ln2)})
	near(t, "kl dlogp", r.DLogp, []float64{-0.125})

	// GSPO: log-ratios ln 2 and 0 make s = √2, above 1.25. With adv 1 the
	// clip holds both tokens at −1.25 (gradient 0); with adv −1 the
	// unclipped −√2 is the min: pg = √2, and each token's gradient is
	// (w₀ + w₁)·(−s·adv)/2 = 0.75·√2/2.
	gspo := ppo
	gspo.Objective = kernels.ObjectiveGSPO
	r = RefPolicyLoss([]float64{-1 + ln2, -1}, []float64{-1, -1}, []float64{-1, -1}, nil, []float64{1, 1}, []float64{0.5, 0.25}, one(2), gspo)
	near(t, "gspo clipped loss", r.Loss, []float64{-0.5 * 1.25, -0.25 * 1.25})
	near(t, "gspo clipped dlogp", r.DLogp, []float64{0, 0})
	r = RefPolicyLoss([]float64{-1 + ln2, -1}, []float64{-1, -1}, []float64{-1, -1}, nil, []float64{-1, -1}, []float64{0.5, 0.25}, one(2), gspo)
	near(t, "gspo loss", r.Loss, []float64{0.5 * math.Sqrt2, 0.25 * math.Sqrt2})
	near(t, "gspo dlogp", r.DLogp, []float64{0.75 * math.Sqrt2 / 2, 0.75 * math.Sqrt2 / 2})

	// Sequence mask: old − behaviour sums to ln 4, ρ = 4 > 2: both tokens
	// masked above, loss and gradient 0. Token truncate: ρ = 2 and 2 → 2
	// (the cap is inclusive) and ρ = 1/4 → 1/2: the PPO term scaled by ρ.
	seq := ppo
	seq.IS, seq.ISMin, seq.ISMax = kernels.ISSequenceMask, 0.5, 2
	r = RefPolicyLoss([]float64{-1, -1}, []float64{-1, -1}, []float64{-1 - ln2, -1 - ln2}, nil, []float64{1, 1}, []float64{1, 1}, one(2), seq)
	near(t, "sequence_mask loss", r.Loss, []float64{0, 0})
	near(t, "sequence_mask isClip", r.ISClip, []float64{1, 1})
	tok := ppo
	tok.IS, tok.ISMin, tok.ISMax = kernels.ISTokenTruncate, 0.5, 2
	r = RefPolicyLoss([]float64{-1, -1}, []float64{-1, -1}, []float64{-1 - ln2, -1 + 2*ln2}, nil, []float64{1, 1}, []float64{1, 1}, one(2), tok)
	near(t, "token_truncate loss", r.Loss, []float64{-2, -0.5})
	near(t, "token_truncate dlogp", r.DLogp, []float64{-2, -0.5})
	near(t, "token_truncate isClip", r.ISClip, []float64{0, -1})

	// CISPO, cap 2: ratio 4 is capped (loss −2·adv·logp, gradient −2·adv),
	// ratio 1/2 is not.
	cispo := kernels.PolicyLossParams{Objective: kernels.ObjectiveCISPO, EpsHigh: 2}
	r = RefPolicyLoss([]float64{-1 + 2*ln2, -1 - ln2}, []float64{-1, -1}, []float64{-1, -1}, nil, []float64{1, 1}, []float64{1, 1}, one(2), cispo)
	near(t, "cispo loss", r.Loss, []float64{2 * (-1 + 2*ln2) * -1, 0.5 * (-1 - ln2) * -1})
	near(t, "cispo dlogp", r.DLogp, []float64{-2, -0.5})
	near(t, "cispo clip", r.Clip, []float64{1, 0})

	// DPPO: p = 1/2 against behaviour 1/4 (Δp = 1/4 > 0.2): masked with
	// adv 1, kept with adv −1 (the low side needs Δp < −0.2); the KL term
	// kl_tau·ln²2 is there either way.
	dppo := kernels.PolicyLossParams{Objective: kernels.ObjectiveDPPO, MaskLow: 0.2, MaskHigh: 0.2, AdvTau: 1, KLTau: 0.125}
	lp, bh := math.Log(0.5), math.Log(0.25)
	r = RefPolicyLoss([]float64{lp, lp}, []float64{bh, bh}, []float64{bh, bh}, nil, []float64{1, -1}, []float64{1, 1}, one(2), dppo)
	k := 0.125 * ln2 * ln2
	near(t, "dppo loss", r.Loss, []float64{k, 2 + k})
	near(t, "dppo dlogp", r.DLogp, []float64{2 * 0.125 * ln2, 2 + 2*0.125*ln2})
	near(t, "dppo clip", r.Clip, []float64{1, 0})
	near(t, "dppo mismatch", r.Mismatch, []float64{1 - ln2, 1 - ln2})
}

func TestRefAdamWByHand(t *testing.T) {
	// lr 1/8, wd 1/2, β1 7/8, β2 1 − 2⁻¹⁰, eps 0: all float32-exact.
	p := kernels.AdamWParams{LR: 0.125, Beta1: 0.875, Beta2: 1 - 1.0/1024, WeightDecay: 0.5, Step: 1}
	par, m, v := []float64{1}, []float64{0}, []float64{0}
	// Step 1, g = 2: decay p = 1 − 1/16 = 0.9375; m = 1/4, v = 2⁻⁸;
	// m̂ = 2, v̂ = 4: p = 0.9375 − (1/8)·2/2 = 0.8125.
	RefAdamW(par, []float64{2}, m, v, p)
	near(t, "m1", m, []float64{0.25})
	near(t, "v1", v, []float64{1.0 / 256})
	near(t, "p1", par, []float64{0.8125})
	// Step 2, g = −2: decay p = 0.8125·15/16 = 0.76171875; m = 7/32 − 1/4 =
	// −1/32, v = 2⁻⁸(2 − 2⁻¹⁰); corrections 1 − 49/64 = 15/64 and
	// 2⁻¹⁰(2 − 2⁻¹⁰): m̂ = −2/15, v̂ = 4: p = 0.76171875 + (1/8)(2/15)/2.
	p.Step = 2
	RefAdamW(par, []float64{-2}, m, v, p)
	near(t, "m2", m, []float64{-1.0 / 32})
	near(t, "v2", v, []float64{(2 - 1.0/1024) / 256})
	near(t, "p2", par, []float64{0.76171875 + 1.0/120})
	// A zero gradient with zero state leaves only the decay.
	par, m, v = []float64{2}, []float64{0}, []float64{0}
	RefAdamW(par, []float64{0}, m, v, kernels.AdamWParams{LR: 0.125, Beta1: 0.875, Beta2: 0.5, Eps: 1e-8, WeightDecay: 0.5, Step: 1})
	near(t, "p zero grad", par, []float64{2 * 15.0 / 16})
}

// fdRef checks grad against central differences of f along every
// coordinate of x, in float64 (h = 1e-6: truncation ~1e-12 × the third derivative, rounding
// ~1e-10·|f|).
func fdRef(t *testing.T, what string, x, grad []float64, f func([]float64) float64) {
	t.Helper()
	const h = 1e-6
	for i := range x {
		keep := x[i]
		x[i] = keep + h
		fp := f(x)
		x[i] = keep - h
		fm := f(x)
		x[i] = keep
		fd := (fp - fm) / (2 * h)
		if math.Abs(fd-grad[i]) > 1e-6*math.Max(1, math.Abs(fd)) {
			t.Errorf("%s[%d] = %.10g, finite difference %.10g", what, i, grad[i], fd)
		}
	}
}

// dotRef is Σ r·y: the scalar whose gradient a backward with dy = r gives.
func dotRef(r, y []float64) float64 {
	s := 0.0
	for i := range r {
		s += r[i] * y[i]
	}
	return s
}

func randVec(rng *rand.Rand, n int, scale float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = (2*rng.Float64() - 1) * scale
	}
	return v
}

func TestRefBackwardsMatchFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))

	t.Run("RMSNorm", func(t *testing.T) {
		rows, dim, eps := 3, 5, 1e-2
		x, w, r := randVec(rng, rows*dim, 1), randVec(rng, dim, 1.5), randVec(rng, rows*dim, 1)
		_, rstd := RefRMSNorm(x, w, rows, dim, eps)
		dx := RefRMSNormBackward(r, x, w, rstd, rows, dim)
		fdRef(t, "dx", x, dx, func(x []float64) float64 {
			y, _ := RefRMSNorm(x, w, rows, dim, eps)
			return dotRef(r, y)
		})
	})

	t.Run("SwiGLU", func(t *testing.T) {
		gate, up, r := randVec(rng, 9, 6), randVec(rng, 9, 2), randVec(rng, 9, 1)
		dg, du := RefSwiGLUBackward(r, gate, up)
		fdRef(t, "dgate", gate, dg, func(g []float64) float64 { return dotRef(r, RefSwiGLU(g, up)) })
		fdRef(t, "dup", up, du, func(u []float64) float64 { return dotRef(r, RefSwiGLU(gate, u)) })
	})

	t.Run("Attention", func(t *testing.T) {
		// Two slots, GQA 2, one slot continuing after a cached prefix.
		nHead, nKV, hd, maxLen := 4, 2, 3, 5
		slot := []int32{1, 1, 1, 0, 0}
		pos := []int32{0, 1, 2, 3, 4}
		n := len(slot)
		q := randVec(rng, n*nHead*hd, 1.5)
		k, v := randVec(rng, 2*maxLen*nKV*hd, 1.5), randVec(rng, 2*maxLen*nKV*hd, 1)
		r := randVec(rng, n*nHead*hd, 1)
		sc := 0.7
		dq, dk, dv := RefAttentionBackward(r, q, k, v, slot, pos, IdentityPages(2, maxLen), n, nHead, nKV, hd, sc)
		out := func(q, k, v []float64) float64 {
			o, _ := RefAttention(q, k, v, slot, pos, IdentityPages(2, maxLen), n, nHead, nKV, hd, sc)
			return dotRef(r, o)
		}
		fdRef(t, "dq", q, dq, func(q []float64) float64 { return out(q, k, v) })
		fdRef(t, "dk", k, dk, func(k []float64) float64 { return out(q, k, v) })
		fdRef(t, "dv", v, dv, func(v []float64) float64 { return out(q, k, v) })
		// Slot 1 only reaches position 2: nothing reads positions 3 and 4.
		for j := 3 * nKV * hd; j < maxLen*nKV*hd; j++ {
			if at := maxLen*nKV*hd + j; dk[at] != 0 || dv[at] != 0 {
				t.Fatalf("gradient at unread cache element %d: dk %v dv %v", at, dk[at], dv[at])
			}
		}
	})

	t.Run("AttentionVariant", func(t *testing.T) {
		// The Attention case above under a window of 2 and sinks (own
		// stream, so the other subtests' values are unchanged).
		rng := rand.New(rand.NewPCG(21, 22))
		nHead, nKV, hd, maxLen := 4, 2, 3, 5
		slot := []int32{1, 1, 1, 0, 0}
		pos := []int32{0, 1, 2, 3, 4}
		n := len(slot)
		q := randVec(rng, n*nHead*hd, 1.5)
		k, v := randVec(rng, 2*maxLen*nKV*hd, 1.5), randVec(rng, 2*maxLen*nKV*hd, 1)
		r := randVec(rng, n*nHead*hd, 1)
		rv := RefVariant{Window: 2, Sinks: randVec(rng, nHead, 2)}
		sc := 0.7
		dq, dk, dv := RefAttentionBackwardVariant(r, q, k, v, slot, pos, IdentityPages(2, maxLen), n, nHead, nKV, hd, sc, rv)
		out := func(q, k, v []float64) float64 {
			o, _ := RefAttentionVariant(q, k, v, slot, pos, IdentityPages(2, maxLen), n, nHead, nKV, hd, sc, rv)
			return dotRef(r, o)
		}
		fdRef(t, "dq", q, dq, func(q []float64) float64 { return out(q, k, v) })
		fdRef(t, "dk", k, dk, func(k []float64) float64 { return out(q, k, v) })
		fdRef(t, "dv", v, dv, func(v []float64) float64 { return out(q, k, v) })
		// Slot 0's tokens at 3 and 4 see positions 2..4: nothing reads 0, 1.
		for j := 0; j < 2*nKV*hd; j++ {
			if dk[j] != 0 || dv[j] != 0 {
				t.Fatalf("gradient before every window at cache element %d: dk %v dv %v", j, dk[j], dv[j])
			}
		}
	})

	t.Run("LogSoftmaxGather", func(t *testing.T) {
		rows, vocab := 3, 6
		logits, r := randVec(rng, rows*vocab, 3), randVec(rng, rows, 1)
		target := []int32{5, 0, 2}
		dl := RefLogSoftmaxGatherBackward(r, logits, target, rows, vocab)
		fdRef(t, "dlogits", logits, dl, func(l []float64) float64 {
			lp, _ := RefLogSoftmaxGather(l, target, rows, vocab)
			return dotRef(r, lp)
		})
	})

	t.Run("PolicyLoss", func(t *testing.T) {
		// Ratios inside, below and above [0.8, 1.28] with both signs of
		// advantage, so every branch of the min is differentiated; the
		// same tokens as two GSPO sequences (ratios √(1.1·0.5·0.5) and
		// √(2·2·0.9)), and under DPPO.
		ratios := []float64{1.1, 0.5, 0.5, 2, 2, 0.9}
		adv := []float64{0.7, 1.3, -0.4, 0.9, -1.1, 0}
		n := len(ratios)
		old, ref, w := randVec(rng, n, 2), randVec(rng, n, 2), randVec(rng, n, 1)
		logp, bh := make([]float64, n), make([]float64, n)
		for i := range logp {
			old[i] -= 3
			ref[i] -= 3
			logp[i] = old[i] + math.Log(ratios[i])
			bh[i] = old[i] + 0.1*float64(i-3)
		}
		for _, p := range []kernels.PolicyLossParams{
			{EpsLow: 0.2, EpsHigh: 0.28, Beta: 0.04, IS: kernels.ISTokenTruncate, ISMin: 0.5, ISMax: 1.2},
			{Objective: kernels.ObjectiveGSPO, EpsLow: 0.2, EpsHigh: 0.28, Beta: 0.04, IS: kernels.ISSequenceTruncate, ISMax: 3},
			{Objective: kernels.ObjectiveDPPO, MaskLow: 0.01, MaskHigh: 0.01, AdvTau: 0.5, KLTau: 0.3, Beta: 0.04},
		} {
			seqs := []int32{0, 3, 6}
			a := adv
			if p.Objective == kernels.ObjectiveGSPO {
				a = []float64{0.7, 0.7, 0.7, -1.1, -1.1, -1.1}
			}
			d := RefPolicyLoss(logp, old, bh, ref, a, w, seqs, p).DLogp
			fdRef(t, "dlogp", logp, d, func(lp []float64) float64 {
				s := 0.0
				for _, l := range RefPolicyLoss(lp, old, bh, ref, a, w, seqs, p).Loss {
					s += l
				}
				return s
			})
		}
	})
}

// TestSumSquaresCaseNeedsFloat64 shows that the 10⁶-element SumSquares
// case fails a float32 accumulator, so the case can tell the two apart.
func TestSumSquaresCaseNeedsFloat64(t *testing.T) {
	x := sumSquaresValues(2203, 1000000) // the seed of the n=1000000 case
	var naive float32
	want := 0.0
	for _, v := range x {
		naive += v * v
		want += float64(v) * float64(v)
	}
	if err := Compare("float32 sum", []float32{naive}, []float64{want}, tolSumSquares); err == nil {
		t.Fatalf("a float32 accumulator (%v, want %v) passes tolSumSquares", naive, want)
	}
	if err := Compare("float64 sum", []float32{float32(want)}, []float64{want}, tolSumSquares); err != nil {
		t.Fatal(err)
	}
	t.Logf("float32 accumulator: relative error %.2g", math.Abs(float64(naive)-want)/want)
}
