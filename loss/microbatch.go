package loss

import (
	"fmt"
	"math"
	"slices"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

type lossSums struct {
	loss, entropy, kl, mismatch float64
	clipLow, clipHigh           int
	isLow, isHigh               int // corrections cut below and above
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

// stepStats holds, on the device, the per-token metrics of every trained
// token of an optimiser step — log-prob, entropy, loss, clip decision and
// KL — each micro-batch writing its rows at off, so they are read back
// once, after the last micro-batch (read), not after each: a micro-batch
// then waits for nothing. rows[i] names token i's batch row, for the
// error a non-finite log-prob gives.
type stepStats struct {
	be                                          kernels.Backend
	logp, ent, loss, clip, isClip, mismatch, kl kernels.Buffer
	off                                         int
	rows                                        []int32
}

func newStepStats(be kernels.Backend, n int, kl bool) *stepStats {
	f := func() kernels.Buffer { return be.Alloc(kernels.F32, n) }
	st := &stepStats{be: be, logp: f(), ent: f(), loss: f(), clip: f(), isClip: f(), mismatch: f()}
	if kl {
		st.kl = f()
	}
	return st
}

func (st *stepStats) free() {
	for _, b := range []kernels.Buffer{st.logp, st.ent, st.loss, st.clip, st.isClip, st.mismatch, st.kl} {
		if b != nil {
			st.be.Free(b)
		}
	}
}

// slice is rows [off, off+n) of b, or nil for a nil b.
func (st *stepStats) slice(b kernels.Buffer, n int) kernels.Buffer {
	if b == nil {
		return nil
	}
	return b.Slice(st.off, n)
}

// read downloads the step's metrics and sums them into sums.
func (st *stepStats) read(sums *lossSums) error {
	n := st.off
	down := func(b kernels.Buffer) []float32 {
		v := make([]float32, n)
		st.be.Download(v, b.Slice(0, n))
		return v
	}
	logp, ent, loss, clip, isClip, mismatch := down(st.logp), down(st.ent), down(st.loss), down(st.clip), down(st.isClip), down(st.mismatch)
	var kl []float32
	if st.kl != nil {
		kl = make([]float32, n)
		st.be.Download(kl, st.kl.Slice(0, n))
	}
	if err := st.be.Sync(); err != nil {
		return err
	}
	for t := range n {
		if math.IsNaN(float64(logp[t])) || math.IsInf(float64(logp[t]), 0) {
			return fmt.Errorf("non-finite log-probability %v at token %d of the batch: the model's logits overflowed or hold NaN", logp[t], st.rows[t])
		}
		sums.loss += float64(loss[t])
		sums.entropy += float64(ent[t])
		sums.mismatch += float64(mismatch[t])
		switch {
		case isClip[t] < 0:
			sums.isLow++
		case isClip[t] > 0:
			sums.isHigh++
		}
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
// writes its trained tokens' metrics into st. Only rows with loss weight
// are scored (the prompt's and masked tokens' rows would add exact zeros
// to the gradient through the largest GEMM of the step), so the loss runs
// over those rows alone; a micro-batch without any is skipped. The per-token
// KL and clip decisions come from PolicyLoss itself (the float64 values the
// loss used), so the host only sums them, once per step (stepStats.read).
// A mixture-of-experts micro-batch's routing mismatch (routing replay) and
// load-balancing loss are host values the model computes from what it
// reads back in ForwardTrain and Backward (model.Trace.RoutingMismatch,
// AuxLoss): they go into sums as they come and reach Stats with the
// step's metrics; only such a micro-batch waits for the device.
func policyMicroBatch(policy *model.Model, samples []Sample, weights [][]float32, cfg Config, sums *lossSums, st *stepStats) error {
	be := policy.Backend
	var b model.Batch
	var lr lossRows
	for i := range samples {
		s := &samples[i]
		start := int32(b.Len())
		seq := append(append([]int32{}, s.Prompt...), s.Completion...)
		b.Add(i, 0, seq[:len(seq)-1]...)
		if j := promptOwner(samples, i); j >= 0 && sums.sharePrompts() {
			b.Share(i, j, len(s.Prompt))
		}
		lr.add(s, start, weights[i])
	}
	rows, targets := lr.rows, lr.targets
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
	var refBuf kernels.Buffer
	if cfg.Beta != 0 {
		if refBuf, err = referenceLogp(policy, &b, rows, targets); err != nil {
			return err
		}
		defer be.Free(refBuf)
	}
	dlogp := policyLoss(be, tr.Logp, refBuf, &lr, cfg, st)
	defer be.Free(dlogp)
	if err := tr.Backward(dlogp); err != nil {
		return err
	}
	sums.aux += share * tr.AuxLoss
	be.Copy(st.slice(st.ent, n), tr.Entropy)
	st.off += n
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
