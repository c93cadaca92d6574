package loss

import (
	"fmt"
	"math"
	"slices"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

type lossSums struct {
	loss, entropy, kl float64
	clipLow, clipHigh int
	// replayed tokens and, weighted by them, the fraction whose routing
	// recomputation flips.
	replayed int
	flipped  float64
	// The load-balancing loss: its coefficient (0: off), the tokens of
	// the whole batch that weigh each micro-batch's share, and the
	// weighted sum of the micro-batches' values.
	auxCoef   float64
	auxTokens int
	aux       float64
}

// sharePrompts reports whether micro-batches run a shared prompt once.
// Not with the load-balancing loss: it averages over the trace's tokens
// (model.Trace.AuxCoef), so a prompt run once would weigh 1/G of what it
// does unshared, and the loss would no longer be the unshared batch's.
func (s *lossSums) sharePrompts() bool { return s.auxCoef == 0 }

// promptOwner is the first sample before i in the micro-batch with i's
// prompt (a GRPO group's rollouts are consecutive), or −1: the forward runs
// a shared prompt once (model.Batch.Share).
func promptOwner(samples []Sample, i int) int {
	j := i
	for j > 0 && slices.Equal(samples[j-1].Prompt, samples[i].Prompt) {
		j--
	}
	if j == i {
		return -1
	}
	return j
}

// policyMicroBatch runs one micro-batch's forward, loss and backward and
// adds its trained tokens' metrics into sums. Only rows with loss weight
// are scored (the prompt's and masked tokens' rows would add exact zeros
// to the gradient through the largest GEMM of the step), so the loss runs
// over those rows alone; a micro-batch without any is skipped. The per-token
// KL and clip decisions come from PolicyLoss itself (the float64 values the
// loss used), so the host only sums them.
func policyMicroBatch(policy *model.Model, samples []Sample, weights [][]float32, cfg Config, sums *lossSums) error {
	be := policy.Backend
	var b model.Batch
	var rows, targets []int32
	var old, adv, w []float32
	for i := range samples {
		s := &samples[i]
		start := int32(b.Len())
		seq := append(append([]int32{}, s.Prompt...), s.Completion...)
		b.Add(i, 0, seq[:len(seq)-1]...)
		if j := promptOwner(samples, i); j >= 0 && sums.sharePrompts() {
			b.Share(i, j, len(s.Prompt))
		}
		// Row len(Prompt)-1+j predicts completion token j; the rows before
		// it predict prompt tokens and carry no loss.
		for j, wj := range weights[i] {
			if wj == 0 {
				continue
			}
			rows = append(rows, start+int32(len(s.Prompt)-1+j))
			targets = append(targets, s.Completion[j])
			old, adv, w = append(old, s.OldLogp[j]), append(adv, s.Advantage), append(w, wj)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	if cfg.RoutingReplay {
		b.Experts = replayedRouting(samples)
	}
	n := len(rows)
	tr, err := policy.ForwardTrain(&b, rows, targets)
	if err != nil {
		return err
	}
	defer tr.Free()
	if b.Experts != nil {
		sums.replayed += b.Len()
		sums.flipped += tr.RoutingMismatch * float64(b.Len())
	}
	share := 0.0
	if sums.auxCoef > 0 {
		share = float64(b.Len()) / float64(sums.auxTokens)
		tr.AuxCoef = float32(sums.auxCoef * share)
	}
	var refBuf, klBuf kernels.Buffer
	if cfg.Beta != 0 {
		if refBuf, err = referenceLogp(policy, &b, rows, targets); err != nil {
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
	sums.aux += share * tr.AuxLoss

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
			return fmt.Errorf("non-finite log-probability %v at token %d of the batch: the model's logits overflowed or hold NaN", logp[t], rows[t])
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
// over the micro-batch, scoring the same rows, and returns their log-probs
// in a buffer of their own, copied on the device, so that its trace can be
// freed before the loss and the backward allocate. Nothing runs its
// backward, so its trace checkpoints every layer (model.RecomputeLayer):
// it keeps each layer's output and one layer's KV cache, and recomputes
// nothing.
func referenceLogp(policy *model.Model, b *model.Batch, rows, targets []int32) (kernels.Buffer, error) {
	base := policy.WithAdapter(nil)
	base.Recompute, base.CheckpointLayers = model.RecomputeLayer, 0 // every layer
	rt, err := base.ForwardTrain(b, rows, targets)
	if err != nil {
		return nil, err
	}
	defer rt.Free()
	be := policy.Backend
	ref := be.Alloc(kernels.F32, rt.Rows())
	be.Copy(ref, rt.Logp)
	return ref, nil
}

// replayedRouting joins the samples' recorded routings in batch order, or
// is nil unless every sample has one.
func replayedRouting(samples []Sample) []int32 {
	var all []int32
	for i := range samples {
		if samples[i].Experts == nil {
			return nil
		}
		all = append(all, samples[i].Experts...)
	}
	return all
}
