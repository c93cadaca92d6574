package loss

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

type lossSums struct {
	loss, entropy, kl float64
	clipLow, clipHigh int
}

// policyMicroBatch runs one micro-batch's forward, loss and backward and
// adds its trained tokens' metrics into sums. The per-token KL and clip
// decisions come from PolicyLoss itself (the float64 values the loss
// used), so the host only sums them.
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
	var refBuf, klBuf kernels.Buffer
	if cfg.Beta != 0 {
		if refBuf, err = referenceLogp(policy, &b, targets); err != nil {
			return err
		}
		defer be.Free(refBuf)
		klBuf = be.Alloc(kernels.F32, n)
		defer be.Free(klBuf)
	}
	upload := func(v []float32) kernels.Buffer {
		buf := be.Alloc(kernels.F32, len(v))
		be.Upload(buf, v)
		return buf
	}
	oldBuf, advBuf, wBuf := upload(old), upload(adv), upload(w)
	lossBuf, dlogp, clipBuf := be.Alloc(kernels.F32, n), be.Alloc(kernels.F32, n), be.Alloc(kernels.F32, n)
	defer func() {
		for _, x := range []kernels.Buffer{oldBuf, advBuf, wBuf, lossBuf, dlogp, clipBuf} {
			be.Free(x)
		}
	}()
	be.PolicyLoss(lossBuf, dlogp, klBuf, clipBuf, tr.Logp, oldBuf, refBuf, advBuf, wBuf, n, kernels.PolicyLossParams{
		EpsLow: float32(cfg.Epsilon), EpsHigh: float32(cfg.epsHigh()), Beta: float32(cfg.Beta)})
	if err := tr.Backward(dlogp); err != nil {
		return err
	}

	logp, ent, loss, clip := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	be.Download(logp, tr.Logp)
	be.Download(ent, tr.Entropy)
	be.Download(loss, lossBuf)
	be.Download(clip, clipBuf)
	var kl []float32
	if klBuf != nil {
		kl = make([]float32, n)
		be.Download(kl, klBuf)
	}
	if err := be.Sync(); err != nil {
		return err
	}
	for t := range n {
		if math.IsNaN(float64(logp[t])) || math.IsInf(float64(logp[t]), 0) {
			return fmt.Errorf("non-finite log-probability %v at token %d of the batch: the model's logits overflowed or hold NaN", logp[t], t)
		}
		if w[t] == 0 {
			continue
		}
		sums.loss += float64(loss[t])
		sums.entropy += float64(ent[t])
		if kl != nil {
			sums.kl += float64(kl[t])
		}
		switch {
		case clip[t] < 0:
			sums.clipLow++
		case clip[t] > 0:
			sums.clipHigh++
		}
	}
	return nil
}

// referenceLogp runs the KL reference, the policy with its adapter off,
// over the micro-batch and returns its log-probs in a buffer of their own,
// copied on the device, so that its trace can be freed before the loss and
// the backward allocate.
func referenceLogp(policy *model.Model, b *model.Batch, targets []int32) (kernels.Buffer, error) {
	rt, err := policy.WithAdapter(nil).ForwardTrain(b, targets)
	if err != nil {
		return nil, err
	}
	defer rt.Free()
	be := policy.Backend
	ref := be.Alloc(kernels.F32, rt.Len())
	be.Copy(ref, rt.Logp)
	return ref, nil
}
