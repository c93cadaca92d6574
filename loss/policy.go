package loss

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

// Stats are the policy update's metrics, averaged over trained tokens.
// KL is measured only when the penalty is on (Beta > 0): it needs a second
// forward pass through the base model.
type Stats struct {
	Loss                          float64
	Tokens                        int // trained (unmasked) completion tokens
	Entropy, KL                   float64
	ClipLow, ClipHigh, ClipRegion float64 // fractions of trained tokens
}

// PolicyGradient computes the GRPO policy loss of samples under policy (a
// model with its LoRA adapter attached) and adds the gradient of the loss
// into the adapter's gradient buffers. Samples are processed in
// micro-batches of at most microTokens tokens; the per-token weights are
// computed over the whole batch first, so the accumulated gradient equals
// that of one big batch. maxTokens is [sampling] max_tokens (dr_grpo's
// normaliser). With cfg.Beta > 0 the KL reference is policy with its
// adapter switched off.
func PolicyGradient(policy *model.Model, samples []Sample, cfg Config, maxTokens, microTokens int) (Stats, error) {
	var st Stats
	for i, s := range samples {
		if len(s.Prompt) == 0 || len(s.Completion) == 0 {
			return st, fmt.Errorf("sample %d: empty prompt or completion", i)
		}
		if len(s.OldLogp) != len(s.Completion) || (s.ModelMask != nil && len(s.ModelMask) != len(s.Completion)) {
			return st, fmt.Errorf("sample %d: %d completion tokens but %d old log-probs and %d mask entries", i, len(s.Completion), len(s.OldLogp), len(s.ModelMask))
		}
	}
	weights, total := tokenWeights(samples, cfg, maxTokens)
	st.Tokens = total
	if total == 0 {
		return st, nil
	}
	var sums lossSums
	for lo := 0; lo < len(samples); {
		hi, n := lo, 0
		for hi < len(samples) && (hi == lo || n+samples[hi].SeqLen() <= microTokens) {
			n += samples[hi].SeqLen()
			hi++
		}
		if err := policyMicroBatch(policy, samples[lo:hi], weights[lo:hi], cfg, &sums); err != nil {
			return st, err
		}
		lo = hi
	}
	st.Loss = sums.loss
	t := float64(total)
	st.Entropy, st.KL = sums.entropy/t, sums.kl/t
	st.ClipLow, st.ClipHigh = float64(sums.clipLow)/t, float64(sums.clipHigh)/t
	st.ClipRegion = float64(sums.clipLow+sums.clipHigh) / t
	return st, nil
}

type lossSums struct {
	loss, entropy, kl float64
	clipLow, clipHigh int
}

func policyMicroBatch(policy *model.Model, samples []Sample, weights [][]float32, cfg Config, sums *lossSums) error {
	be := policy.Backend
	var b model.Batch
	var targets []int32
	var old, adv, w []float32
	for i := range samples {
		s := &samples[i]
		seq := append(append([]int32{}, s.Prompt...), s.Completion...)
		b.Add(i, 0, seq[:len(seq)-1]...)
		targets = append(targets, seq[1:]...)
		// Rows before the last prompt token predict prompt tokens: weight 0.
		for range len(s.Prompt) - 1 {
			old, adv, w = append(old, 0), append(adv, 0), append(w, 0)
		}
		old = append(old, s.OldLogp...)
		w = append(w, weights[i]...)
		for range s.Completion {
			adv = append(adv, s.Advantage)
		}
	}
	n := b.Len()
	tr, err := policy.ForwardTrain(&b, targets)
	if err != nil {
		return err
	}
	defer tr.Free()
	var ref []float32
	var refBuf kernels.Buffer
	if cfg.Beta != 0 {
		rt, err := policy.WithAdapter(nil).ForwardTrain(&b, targets)
		if err != nil {
			return err
		}
		ref = make([]float32, n)
		be.Download(ref, rt.Logp)
		rt.Free()
		refBuf = be.Alloc(kernels.F32, n)
		defer be.Free(refBuf)
		be.Upload(refBuf, ref)
	}
	upload := func(v []float32) kernels.Buffer {
		buf := be.Alloc(kernels.F32, len(v))
		be.Upload(buf, v)
		return buf
	}
	oldBuf, advBuf, wBuf := upload(old), upload(adv), upload(w)
	lossBuf, dlogp := be.Alloc(kernels.F32, n), be.Alloc(kernels.F32, n)
	defer func() {
		for _, x := range []kernels.Buffer{oldBuf, advBuf, wBuf, lossBuf, dlogp} {
			be.Free(x)
		}
	}()
	be.PolicyLoss(lossBuf, dlogp, tr.Logp, oldBuf, refBuf, advBuf, wBuf, n, kernels.PolicyLossParams{
		EpsLow: float32(cfg.Epsilon), EpsHigh: float32(cfg.epsHigh()), Beta: float32(cfg.Beta)})
	if err := tr.Backward(dlogp); err != nil {
		return err
	}

	logp, ent, loss := make([]float32, n), make([]float32, n), make([]float32, n)
	be.Download(logp, tr.Logp)
	be.Download(ent, tr.Entropy)
	be.Download(loss, lossBuf)
	if err := be.Sync(); err != nil {
		return err
	}
	lo, hi := 1-cfg.Epsilon, 1+cfg.epsHigh()
	for t := range n {
		if math.IsNaN(float64(logp[t])) || math.IsInf(float64(logp[t]), 0) {
			return fmt.Errorf("non-finite log-probability %v at token %d of the batch: the model's logits overflowed or hold NaN", logp[t], t)
		}
		if w[t] == 0 {
			continue
		}
		sums.loss += float64(loss[t])
		sums.entropy += float64(ent[t])
		if ref != nil {
			d := float64(ref[t] - logp[t])
			sums.kl += math.Exp(d) - d - 1
		}
		ratio := math.Exp(float64(logp[t] - old[t]))
		switch {
		case ratio < lo && adv[t] < 0:
			sums.clipLow++
		case ratio > hi && adv[t] > 0:
			sums.clipHigh++
		}
	}
	return nil
}
