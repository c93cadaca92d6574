package model

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// Model is a loaded architecture: its config and frozen weights on a
// Backend.
type Model struct {
	Config  *Config
	Backend kernels.Backend
	W       Weights
	invFreq kernels.Buffer
}

func newModel(cfg *Config, be kernels.Backend) *Model {
	m := &Model{Config: cfg, Backend: be}
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
func (m *Model) Forward(cache *KVCache, b *Batch, logitRows []int32) (kernels.Buffer, error) {
	if err := b.validate(m.Config, cache); err != nil {
		return nil, err
	}
	if logitRows == nil {
		logitRows = make([]int32, b.Len())
		for i := range logitRows {
			logitRows[i] = int32(i)
		}
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
	tokens, slots, pos := b.upload(be, a)

	x := a.alloc(kernels.F32, n*h)
	be.GatherRows(x, m.W.Embed, tokens, n, h)
	s := m.newScratch(a, n)
	for l := range m.W.Layers {
		m.layerForward(l, x, cache, slots, pos, n, s)
	}

	rows := a.alloc(kernels.I32, len(logitRows))
	be.UploadI32(rows, logitRows)
	sel := a.alloc(kernels.F32, len(logitRows)*h)
	be.GatherRows(sel, x, rows, len(logitRows), h)
	be.RMSNorm(sel, nil, sel, m.W.Norm, len(logitRows), h, float32(c.RMSNormEps))
	logits := be.Alloc(kernels.F32, len(logitRows)*c.VocabSize)
	be.MatMul(logits, sel, m.W.LMHead, len(logitRows), c.VocabSize, h, false, true, 1, 0)
	if err := be.Sync(); err != nil {
		be.Free(logits)
		return nil, fmt.Errorf("forward on %s: %w", be.Name(), err)
	}
	return logits, nil
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

// scratch holds one layer's intermediate activations; layers reuse it.
type scratch struct {
	h, q, k, v, attn, o kernels.Buffer
	gate, up            kernels.Buffer
}

func (m *Model) newScratch(a *arena, n int) *scratch {
	c := m.Config
	q, kv := c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	return &scratch{
		h: a.alloc(kernels.F32, n*c.HiddenSize), o: a.alloc(kernels.F32, n*c.HiddenSize),
		q: a.alloc(kernels.F32, n*q), attn: a.alloc(kernels.F32, n*q),
		k: a.alloc(kernels.F32, n*kv), v: a.alloc(kernels.F32, n*kv),
		gate: a.alloc(kernels.F32, n*c.IntermediateSize), up: a.alloc(kernels.F32, n*c.IntermediateSize),
	}
}

// linear computes out = in·Wᵀ (+ bias) for n rows.
func (m *Model) linear(out, in, w, bias kernels.Buffer, n, outDim, inDim int) {
	m.Backend.MatMul(out, in, w, n, outDim, inDim, false, true, 1, 0)
	if bias != nil {
		m.Backend.AddBias(out, bias, n, outDim)
	}
}

// layerForward applies decoder layer l to the residual stream x in place.
func (m *Model) layerForward(l int, x kernels.Buffer, cache *KVCache, slots, pos kernels.Buffer, n int, s *scratch) {
	be, c, w := m.Backend, m.Config, &m.W.Layers[l]
	h, hd, eps := c.HiddenSize, c.HeadDim, float32(c.RMSNormEps)
	q, kv := c.NumHeads*hd, c.NumKVHeads*hd

	be.RMSNorm(s.h, nil, x, w.InputNorm, n, h, eps)
	m.linear(s.q, s.h, w.Q, w.QBias, n, q, h)
	m.linear(s.k, s.h, w.K, w.KBias, n, kv, h)
	m.linear(s.v, s.h, w.V, w.VBias, n, kv, h)
	if w.QNorm != nil {
		be.RMSNorm(s.q, nil, s.q, w.QNorm, n*c.NumHeads, hd, eps)
		be.RMSNorm(s.k, nil, s.k, w.KNorm, n*c.NumKVHeads, hd, eps)
	}
	be.RoPE(s.q, pos, m.invFreq, n, c.NumHeads, hd, false)
	be.RoPE(s.k, pos, m.invFreq, n, c.NumKVHeads, hd, false)
	be.KVWrite(cache.K[l], s.k, slots, pos, n, kv, cache.MaxLen)
	be.KVWrite(cache.V[l], s.v, slots, pos, n, kv, cache.MaxLen)
	scale := float32(1 / math.Sqrt(float64(hd)))
	be.Attention(s.attn, nil, s.q, cache.K[l], cache.V[l], slots, pos, n, c.NumHeads, c.NumKVHeads, hd, cache.MaxLen, scale)
	m.linear(s.o, s.attn, w.O, w.OBias, n, h, q)
	be.Add(x, x, s.o, n*h)

	be.RMSNorm(s.h, nil, x, w.PostAttnNorm, n, h, eps)
	m.linear(s.gate, s.h, w.Gate, nil, n, c.IntermediateSize, h)
	m.linear(s.up, s.h, w.Up, nil, n, c.IntermediateSize, h)
	be.SwiGLU(s.gate, s.gate, s.up, n*c.IntermediateSize)
	m.linear(s.o, s.gate, w.Down, nil, n, h, c.IntermediateSize)
	be.Add(x, x, s.o, n*h)
}
