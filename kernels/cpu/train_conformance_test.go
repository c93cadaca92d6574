package cpu_test

import (
	"math"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

// The training suite must be able to fail, in its reference cases and in
// its finite-difference cases. Each mutant below is the CPU backend with
// one training op broken the way real kernels break.

// scalesByDivision computes x/(1/alpha), which is not the correctly
// rounded x·alpha when 1/alpha is inexact.
type scalesByDivision struct{ *cpu.Backend }

func (m scalesByDivision) Scale(x kernels.Buffer, alpha float32, n int) {
	xs := cpu.Float32s(x)
	inv := 1 / alpha
	for i := range n {
		xs[i] /= inv
	}
}

// sumsInFloat32 accumulates Σx² in a float32.
type sumsInFloat32 struct{ *cpu.Backend }

func (m sumsInFloat32) SumSquares(out, x kernels.Buffer, n int) {
	var s float32
	for _, v := range cpu.Float32s(x)[:n] {
		s += v * v
	}
	cpu.Float32s(out)[0] = s
}

// ignoresAccumulate overwrites dx even when asked to add into it.
type ignoresAccumulate struct{ *cpu.Backend }

func (m ignoresAccumulate) RMSNormBackward(dx, dxBF16, dy, x, w, rstd kernels.Buffer, rows, dim int, accumulate bool) {
	m.Backend.RMSNormBackward(dx, dxBF16, dy, x, w, rstd, rows, dim, false)
}

// treatsRstdAsConstant drops the term that flows through rstd, by handing
// the backward x = 0 (the first term uses rstd and w only).
type treatsRstdAsConstant struct{ *cpu.Backend }

func (m treatsRstdAsConstant) RMSNormBackward(dx, dxBF16, dy, x, w, rstd kernels.Buffer, rows, dim int, accumulate bool) {
	zero := m.Alloc(kernels.F32, rows*dim)
	defer m.Free(zero)
	m.Backend.RMSNormBackward(dx, dxBF16, dy, zero, w, rstd, rows, dim, accumulate)
}

// siluPrimeIsSigmoid uses σ(g) for silu'(g), forgetting g·σ·(1 − σ).
type siluPrimeIsSigmoid struct{ *cpu.Backend }

func (m siluPrimeIsSigmoid) SwiGLUBackward(dgate, dup, dy, gate, up kernels.Buffer, n int) {
	dg, du, dys, gs, us := cpu.Float32s(dgate), cpu.Float32s(dup), cpu.Float32s(dy), cpu.Float32s(gate), cpu.Float32s(up)
	for i := range n {
		g, u := float64(gs[i]), float64(us[i])
		s := 1 / (1 + math.Exp(-g))
		dg[i] = float32(float64(dys[i]) * u * s)
		du[i] = float32(float64(dys[i]) * g * s)
	}
}

// sigmoidPrimeIsSigmoid uses σ(g) for σ'(g) in dgate, forgetting 1 − σ.
type sigmoidPrimeIsSigmoid struct{ *cpu.Backend }

func (m sigmoidPrimeIsSigmoid) SigmoidGateBackward(dx, dgate, dy, x, gate kernels.Buffer, n int) {
	dxs, dgs, dys, xs, gs := cpu.Float32s(dx), cpu.Float32s(dgate), cpu.Float32s(dy), cpu.Float32s(x), cpu.Float32s(gate)
	for i := range n {
		s := 1 / (1 + math.Exp(-float64(gs[i])))
		d, xv := float64(dys[i]), float64(xs[i])
		dxs[i], dgs[i] = float32(d*s), float32(d*xv*s)
	}
}

// dropsDgate ignores dgate: dqkv comes out in the ungated layout, the
// gate's gradient lost and the k and v gradients at the wrong columns.
type dropsDgate struct{ *cpu.Backend }

func (m dropsDgate) AttentionInputsBackward(dqkv, dq, dgate, dkCache, dvCache, qPre, kPre, rstdQ, rstdK, qNorm, kNorm, invFreq, seq, pos kernels.Buffer,
	pages kernels.KVPages, nTok, nHead, nKV, headDim, rotaryDim int) {
	m.Backend.AttentionInputsBackward(dqkv, dq, nil, dkCache, dvCache, qPre, kPre, rstdQ, rstdK, qNorm, kNorm, invFreq, seq, pos,
		pages, nTok, nHead, nKV, headDim, rotaryDim)
}

// overwritesKVGrads zeroes dk and dv before adding, so gradients from an
// earlier call (another layer's share, or the caller's) are lost.
type overwritesKVGrads struct{ *cpu.Backend }

func (m overwritesKVGrads) AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v, seq, pos kernels.Buffer, pages kernels.KVPages, nTok, nHead, nKV, headDim int, scale float32, variant kernels.AttentionVariant) {
	m.Fill(dk, 0, dk.Len())
	m.Fill(dv, 0, dv.Len())
	m.Backend.AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v, seq, pos, pages, nTok, nHead, nKV, headDim, scale, variant)
}

// dropsSoftmaxCorrection omits D = dout·out from dS = P·(dP − D), by
// handing the backward out = 0.
type dropsSoftmaxCorrection struct{ *cpu.Backend }

func (m dropsSoftmaxCorrection) AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v, seq, pos kernels.Buffer, pages kernels.KVPages, nTok, nHead, nKV, headDim int, scale float32, variant kernels.AttentionVariant) {
	zero := m.Alloc(kernels.F32, out.Len())
	defer m.Free(zero)
	m.Backend.AttentionBackward(dq, dk, dv, dout, zero, lse, q, k, v, seq, pos, pages, nTok, nHead, nKV, headDim, scale, variant)
}

// flipsSoftmaxGradSign returns dlogp·(softmax − onehot).
type flipsSoftmaxGradSign struct{ *cpu.Backend }

func (m flipsSoftmaxGradSign) LogSoftmaxGatherBackward(dlogits, dlogp, logits, target kernels.Buffer, rows, vocab int) {
	m.Backend.LogSoftmaxGatherBackward(dlogits, dlogp, logits, target, rows, vocab)
	m.Scale(dlogits, -1, rows*vocab)
}

// plainPPO reports whether a PolicyLoss call is the token PPO clip
// alone, the calls the PPO mutants below break.
func plainPPO(p kernels.PolicyLossParams) bool {
	return p.Objective == kernels.ObjectivePPO && p.IS == kernels.ISNone && p.Beta == 0
}

// gradientIgnoresClip lets the gradient of −ratio·adv through even where
// the clipped term is the minimum.
type gradientIgnoresClip struct{ *cpu.Backend }

func (m gradientIgnoresClip) PolicyLoss(out kernels.PolicyLossOut, in kernels.PolicyLossIn, p kernels.PolicyLossParams) {
	m.Backend.PolicyLoss(out, in, p)
	d, lp, ol, a, w := cpu.Float32s(out.DLogp), cpu.Float32s(in.Logp), cpu.Float32s(in.OldLogp), cpu.Float32s(in.Adv), cpu.Float32s(in.Weight)
	for t := range in.N {
		if plainPPO(p) {
			d[t] = -w[t] * float32(math.Exp(float64(lp[t]-ol[t]))) * a[t]
		}
	}
}

// clipsBothSides zeroes the gradient whenever the ratio is outside the
// clip range, whatever the sign of the advantage.
type clipsBothSides struct{ *cpu.Backend }

func (m clipsBothSides) PolicyLoss(out kernels.PolicyLossOut, in kernels.PolicyLossIn, p kernels.PolicyLossParams) {
	m.Backend.PolicyLoss(out, in, p)
	d, lp, ol := cpu.Float32s(out.DLogp), cpu.Float32s(in.Logp), cpu.Float32s(in.OldLogp)
	for t := range in.N {
		if r := math.Exp(float64(lp[t] - ol[t])); plainPPO(p) && (r < 1-float64(p.EpsLow) || r > 1+float64(p.EpsHigh)) {
			d[t] = 0
		}
	}
}

// flagsEveryOutlier reports the clip as active for every ratio outside
// the range, whatever the sign of the advantage (the gradient stays right).
type flagsEveryOutlier struct{ *cpu.Backend }

func (m flagsEveryOutlier) PolicyLoss(out kernels.PolicyLossOut, in kernels.PolicyLossIn, p kernels.PolicyLossParams) {
	m.Backend.PolicyLoss(out, in, p)
	c, lp, ol := cpu.Float32s(out.Clip), cpu.Float32s(in.Logp), cpu.Float32s(in.OldLogp)
	for t := range in.N {
		switch r := math.Exp(float64(lp[t] - ol[t])); {
		case !plainPPO(p):
		case r < 1-float64(p.EpsLow):
			c[t] = -1
		case r > 1+float64(p.EpsHigh):
			c[t] = 1
		}
	}
}

// weighsKL reports weight·kl, the term's share of the loss, instead of
// the unweighted kl.
type weighsKL struct{ *cpu.Backend }

func (m weighsKL) PolicyLoss(out kernels.PolicyLossOut, in kernels.PolicyLossIn, p kernels.PolicyLossParams) {
	m.Backend.PolicyLoss(out, in, p)
	if p.Beta != 0 {
		k, w := cpu.Float32s(out.KL), cpu.Float32s(in.Weight)
		for t := range in.N {
			k[t] *= w[t]
		}
	}
}

// gspoSumsLogRatios differentiates GSPO's sequence ratio as if it were
// exp of the sum of the log-ratios (∂/∂logp_t without the 1/|y|).
type gspoSumsLogRatios struct{ *cpu.Backend }

func (m gspoSumsLogRatios) PolicyLoss(out kernels.PolicyLossOut, in kernels.PolicyLossIn, p kernels.PolicyLossParams) {
	m.Backend.PolicyLoss(out, in, p)
	if p.Objective != kernels.ObjectiveGSPO || p.Beta != 0 {
		return
	}
	d, starts := cpu.Float32s(out.DLogp), cpu.Int32s(in.SeqStart)
	for i := range in.NumSeq {
		for t := starts[i]; t < starts[i+1]; t++ {
			d[t] *= float32(starts[i+1] - starts[i])
		}
	}
}

// correctsPerToken applies a sequence-level correction token by token.
type correctsPerToken struct{ *cpu.Backend }

func (m correctsPerToken) PolicyLoss(out kernels.PolicyLossOut, in kernels.PolicyLossIn, p kernels.PolicyLossParams) {
	switch p.IS {
	case kernels.ISSequenceTruncate:
		p.IS = kernels.ISTokenTruncate
	case kernels.ISSequenceMask:
		p.IS = kernels.ISTokenMask
	}
	m.Backend.PolicyLoss(out, in, p)
}

// cispoUncapped forgets CISPO's cap on the importance weight.
type cispoUncapped struct{ *cpu.Backend }

func (m cispoUncapped) PolicyLoss(out kernels.PolicyLossOut, in kernels.PolicyLossIn, p kernels.PolicyLossParams) {
	if p.Objective == kernels.ObjectiveCISPO {
		p.EpsHigh = float32(math.Inf(1))
	}
	m.Backend.PolicyLoss(out, in, p)
}

// dppoHalvesKLGradient takes kl_tau·(logp − behaviour) for the squared
// log-ratio's derivative, without the factor 2.
type dppoHalvesKLGradient struct{ *cpu.Backend }

func (m dppoHalvesKLGradient) PolicyLoss(out kernels.PolicyLossOut, in kernels.PolicyLossIn, p kernels.PolicyLossParams) {
	m.Backend.PolicyLoss(out, in, p)
	if p.Objective != kernels.ObjectiveDPPO {
		return
	}
	d, lp, bh, w := cpu.Float32s(out.DLogp), cpu.Float32s(in.Logp), cpu.Float32s(in.BehaviourLogp), cpu.Float32s(in.Weight)
	for t := range in.N {
		d[t] -= w[t] * p.KLTau * (lp[t] - bh[t])
	}
}

// decaysAfterUpdate applies p·(1 − lr·wd) after the Adam step instead of
// before it.
type decaysAfterUpdate struct{ *cpu.Backend }

func (m decaysAfterUpdate) AdamW(param, grad, mom, v kernels.Buffer, n int, p kernels.AdamWParams) {
	wd := p.WeightDecay
	p.WeightDecay = 0
	m.Backend.AdamW(param, grad, mom, v, n, p)
	m.Scale(param, 1-p.LR*wd, n)
}

// noBiasCorrection updates with m/(√v + eps) at every step.
type noBiasCorrection struct{ *cpu.Backend }

func (m noBiasCorrection) AdamW(param, grad, mom, v kernels.Buffer, n int, p kernels.AdamWParams) {
	ps, gs, ms, vs := cpu.Float32s(param), cpu.Float32s(grad), cpu.Float32s(mom), cpu.Float32s(v)
	for i := range n {
		ps[i] -= p.LR * p.WeightDecay * ps[i]
		ms[i] = p.Beta1*ms[i] + (1-p.Beta1)*gs[i]
		vs[i] = p.Beta2*vs[i] + (1-p.Beta2)*gs[i]*gs[i]
		ps[i] -= p.LR * ms[i] / (float32(math.Sqrt(float64(vs[i]))) + p.Eps)
	}
}

func TestTrainSuiteCatchesBrokenOps(t *testing.T) {
	base := cpu.New()
	mutants := []struct {
		op, why string
		b       kernels.Backend
		fd      bool // a finite-difference case must fail too
	}{
		{"Scale", "divides by 1/alpha", scalesByDivision{base}, false},
		{"SumSquares", "accumulates in float32", sumsInFloat32{base}, false},
		{"RMSNormBackward", "ignores accumulate", ignoresAccumulate{base}, false},
		{"RMSNormBackward", "treats rstd as a constant", treatsRstdAsConstant{base}, true},
		{"SwiGLUBackward", "uses σ for silu'", siluPrimeIsSigmoid{base}, true},
		{"SigmoidGateBackward", "uses σ for σ'", sigmoidPrimeIsSigmoid{base}, true},
		{"AttentionInputsBackward", "ignores dgate", dropsDgate{base}, true},
		{"AttentionBackward", "overwrites dk and dv", overwritesKVGrads{base}, false},
		{"AttentionBackward", "drops the softmax correction D", dropsSoftmaxCorrection{base}, true},
		{"LogSoftmaxGatherBackward", "flips the sign", flipsSoftmaxGradSign{base}, true},
		{"PolicyLoss", "lets the gradient through the clip", gradientIgnoresClip{base}, true},
		{"PolicyLoss", "clips on both sides", clipsBothSides{base}, true},
		{"PolicyLoss", "flags every ratio outside the clip range", flagsEveryOutlier{base}, false},
		{"PolicyLoss", "weighs the per-token KL", weighsKL{base}, false},
		{"PolicyLoss", "differentiates GSPO's ratio without the 1/|y|", gspoSumsLogRatios{base}, true},
		{"PolicyLoss", "corrects per token in a sequence mode", correctsPerToken{base}, false},
		{"PolicyLoss", "forgets CISPO's cap", cispoUncapped{base}, false},
		{"PolicyLoss", "drops the 2 of DPPO's KL gradient", dppoHalvesKLGradient{base}, true},
		{"AdamW", "decays after the update", decaysAfterUpdate{base}, false},
		{"AdamW", "skips bias correction", noBiasCorrection{base}, false},
	}
	for _, m := range mutants {
		if err := kerneltest.CheckTrain(base, m.op); err != nil {
			t.Fatalf("unbroken backend fails %s: %v", m.op, err)
		}
		err := kerneltest.CheckTrain(m.b, m.op)
		if err == nil {
			t.Errorf("%s that %s passes the suite", m.op, m.why)
			continue
		}
		msg := err.Error()
		if m.fd && !strings.Contains(msg, m.op+"/fd,") {
			t.Errorf("%s that %s passes every finite-difference case", m.op, m.why)
		}
		first, _, _ := strings.Cut(msg, "\n")
		t.Logf("%s that %s: %d failing cases, first: %s", m.op, m.why, strings.Count(msg, "\n")+1, first)
	}
}
