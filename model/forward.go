package model

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// Model is a loaded architecture: its config and frozen weights on a
// Backend, plus the LoRA adapter applied on top (nil for none).
type Model struct {
	Config  *Config
	Backend kernels.Backend
	W       Weights
	Adapter Adapter
	// Recompute is the activation-memory policy of ForwardTrain and
	// Backward (recompute.go); the zero value keeps every activation.
	// CheckpointLayers > 0 puts that many layers (the last ones) under
	// RecomputeLayer and leaves Recompute to the others.
	Recompute        Recompute
	CheckpointLayers int
	// NoPrefixSharing makes ForwardTrain ignore Batch.Share, so every
	// sequence runs its own prompt: the same loss and gradients (up to
	// summation order) for more work, kept to measure what sharing saves.
	NoPrefixSharing bool
	// Skipped says which checkpoint tensors Load left out (a vision
	// tower, multi-token-prediction heads), in one line for the log; ""
	// when none.
	Skipped string
	invFreq kernels.Buffer
	// layers is the architecture as blocks (Config.decoderLayers).
	layers []decoderLayer
	// ep is the expert-parallel group of a model whose experts are
	// sharded (moe_ep.go); nil when it holds them all.
	ep *expertParallel
}

func newModel(cfg *Config, be kernels.Backend) *Model {
	m := &Model{Config: cfg, Backend: be, layers: cfg.decoderLayers()}
	inv := cfg.RopeInvFreq()
	m.invFreq = be.Alloc(kernels.F32, len(inv))
	be.Upload(m.invFreq, inv)
	return m
}

// Forward runs the batch through the model, writing its keys and values
// into cache, and returns the logits of the tokens listed in logitRows
// (indices into the batch), len(logitRows) × vocab, in that order; nil
// logitRows means every token. The returned buffer belongs to the caller,
// who frees it with Backend.Free.
//
// On a model whose experts are sharded (ShardExperts) each sparse layer
// exchanges its routed rows with the experts' ranks and back, as the
// training forward does, keeping nothing for a backward: every call is
// collective, so every rank calls Forward (or ForwardIdle, with no tokens
// of its own) as many times and in the same order.
func (m *Model) Forward(cache *KVCache, b *Batch, logitRows []int32) (kernels.Buffer, error) {
	if err := b.validate(m.Config, cache); err != nil {
		return nil, err
	}
	if logitRows == nil {
		logitRows = allRows(b.Len())
	}
	for _, r := range logitRows {
		if r < 0 || int(r) >= b.Len() {
			return nil, fmt.Errorf("logit row %d is outside the batch of %d tokens", r, b.Len())
		}
	}
	be, c := m.Backend, m.Config
	a := &arena{be: be}
	defer a.free()
	n, h := b.Len(), c.HiddenSize
	idx := b.upload(be, a, cache)
	var x kernels.Buffer
	c.embedSpecs(&x, n).alloc(a)
	be.GatherRows(x, m.W.Embed, idx.tokens, n, h)
	acts := m.inferenceActs(a, x, n, m.forwardAttention(cache))
	routing := m.newRouting(a, b)
	ad := m.adapterShape()
	for l := range m.W.Layers {
		if routing != nil && routing[l] != nil {
			acts.moe.useRouting(a, routing[l], b.Experts != nil)
		}
		acts.xa, acts.xaG = [NumProj]kernels.Buffer{}, [numGroups]kernels.Buffer{}
		c.inferenceLoRASpecs(acts, l, n, &ad).alloc(a)
		prev := acts
		if l == 0 {
			prev = nil
		}
		m.layerForwardExchanging(a, l, cache, idx, n, acts, prev)
	}

	r, eps := len(logitRows), float32(c.RMSNormEps)
	gather := !inOrder(logitRows, n)
	var hF, hFb, rows, logits kernels.Buffer // hF: the final norm's output, the LM head's input
	c.forwardHeadSpecs(&hF, &hFb, &rows, r, gather, m.castsBF16()).alloc(a)
	// The logits are the caller's.
	c.logitsSpecs(&logits, r).allocOn(be)
	if !gather {
		// Every token in order (a decode step): the last layer's residual
		// add is fused into the final norm.
		be.AddRMSNorm(x, hF, hFb, nil, acts.xMid, acts.o, m.W.Norm, n, h, eps)
	} else {
		m.finishLayers(acts, n)
		be.UploadI32(rows, logitRows)
		be.GatherRows(hF, x, rows, r, h)
		be.AddRMSNorm(nil, hF, hFb, nil, hF, nil, m.W.Norm, r, h, eps)
	}
	be.MatMul(logits, gemmInput(hF, hFb), m.W.LMHead, r, c.VocabSize, h, false, true, 1, 0)
	if err := be.Sync(); err != nil {
		be.Free(logits)
		return nil, fmt.Errorf("forward on %s: %w", be.Name(), err)
	}
	if err := m.exchangeErr(); err != nil {
		be.Free(logits)
		return nil, err
	}
	if b.RecordExperts != nil {
		routing.record(be, c, b.RecordExperts, n)
	}
	return logits, nil
}

// inOrder reports whether rows is every index of n tokens, in order.
func inOrder(rows []int32, n int) bool {
	if len(rows) != n {
		return false
	}
	for i, r := range rows {
		if int(r) != i {
			return false
		}
	}
	return true
}

func allRows(n int) []int32 {
	r := make([]int32, n)
	for i := range r {
		r[i] = int32(i)
	}
	return r
}

// Logits runs Forward and downloads the logits to the host.
func (m *Model) Logits(cache *KVCache, b *Batch, logitRows []int32) ([]float32, error) {
	buf, err := m.Forward(cache, b, logitRows)
	if err != nil {
		return nil, err
	}
	defer m.Backend.Free(buf)
	out := make([]float32, buf.Len())
	m.Backend.Download(out, buf)
	return out, m.Backend.Sync()
}
