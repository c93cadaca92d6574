package model

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// Trace is what a training forward keeps for Backward: every layer's
// activations, the final norm's input and statistics, the logits, and the
// log-probabilities and entropies of the targets. Free releases it all.
type Trace struct {
	m         *Model
	a         *arena
	n         int
	idx       batchIndex
	cache     *KVCache
	cacheRows kernels.Buffer // slot·maxLen + pos of each token: its cache row
	layers    []*layerActs
	xFinal    kernels.Buffer
	rstdF     kernels.Buffer
	logits    kernels.Buffer
	targets   kernels.Buffer
	// Logp[t] = log p(targets[t] | tokens ≤ t); Entropy[t] is the entropy
	// of the distribution at t. Both n long, on the backend.
	Logp, Entropy kernels.Buffer
}

// ForwardTrain runs a training forward over a packed batch: every token's
// logits are computed and scored against targets[t] (the token that follows
// token t; rows whose target does not matter may hold any valid id and get
// a zero gradient). Each sequence has its own slot and positions from 0,
// and the trace owns a KV cache sized for the batch.
func (m *Model) ForwardTrain(b *Batch, targets []int32) (*Trace, error) {
	if len(targets) != b.Len() {
		return nil, fmt.Errorf("%d targets for a batch of %d tokens", len(targets), b.Len())
	}
	c := m.Config
	for i, t := range targets {
		if t < 0 || int(t) >= c.VocabSize {
			return nil, fmt.Errorf("target %d at index %d is outside the vocabulary [0, %d)", t, i, c.VocabSize)
		}
	}
	slots, maxLen := 0, 0
	for i := range b.Slots {
		slots, maxLen = max(slots, int(b.Slots[i])+1), max(maxLen, int(b.Positions[i])+1)
	}
	if slots == 0 {
		return nil, fmt.Errorf("empty batch")
	}
	cache := m.NewKVCache(slots, maxLen)
	if err := b.validate(c, cache); err != nil {
		cache.Free()
		return nil, err
	}
	be := m.Backend
	tr := &Trace{m: m, a: &arena{be: be}, n: b.Len(), cache: cache}
	a, n, h, v := tr.a, b.Len(), c.HiddenSize, c.VocabSize
	tr.idx = b.upload(be, a)
	rows := make([]int32, n)
	for i := range rows {
		rows[i] = b.Slots[i]*int32(maxLen) + b.Positions[i]
	}
	tr.cacheRows = a.alloc(kernels.I32, n)
	be.UploadI32(tr.cacheRows, rows)
	tr.targets = a.alloc(kernels.I32, n)
	be.UploadI32(tr.targets, targets)

	x := a.alloc(kernels.F32, n*h)
	be.GatherRows(x, m.W.Embed, tr.idx.tokens, n, h)
	for l := range m.W.Layers {
		s := m.trainingActs(a, l, x, n)
		m.layerForward(a, l, cache, tr.idx, n, s)
		tr.layers = append(tr.layers, s)
		x = s.xOut
	}
	tr.xFinal, tr.rstdF = x, a.alloc(kernels.F32, n)
	hF := a.alloc(kernels.F32, n*h)
	be.RMSNorm(hF, tr.rstdF, x, m.W.Norm, n, h, float32(c.RMSNormEps))
	tr.logits = a.alloc(kernels.F32, n*v)
	be.MatMul(tr.logits, hF, m.W.LMHead, n, v, h, false, true, 1, 0)
	tr.Logp, tr.Entropy = a.alloc(kernels.F32, n), a.alloc(kernels.F32, n)
	be.LogSoftmaxGather(tr.Logp, tr.Entropy, tr.logits, tr.targets, n, v)
	if err := be.Sync(); err != nil {
		tr.Free()
		return nil, fmt.Errorf("training forward on %s: %w", be.Name(), err)
	}
	return tr, nil
}

// Len is the number of tokens in the traced batch.
func (tr *Trace) Len() int { return tr.n }

// Free releases the trace's buffers and cache.
func (tr *Trace) Free() {
	tr.a.free()
	tr.cache.Free()
}

// Backward propagates dlogp (n values: the loss gradient with respect to
// each token's Logp) back through the model and adds the gradients of every
// LoRA parameter into its DA and DB. Frozen weights get no gradient.
func (tr *Trace) Backward(dlogp kernels.Buffer) error {
	m, be, c := tr.m, tr.m.Backend, tr.m.Config
	n, h, v := tr.n, c.HiddenSize, c.VocabSize
	// Scratch is freed as soon as it is dead: the head's (n × vocab) before
	// the layers run, each layer's before the next, so the peak is the
	// larger of the head's and one layer's, not their sum.
	head := &arena{be: be}
	dlogits := head.alloc(kernels.F32, n*v)
	be.LogSoftmaxGatherBackward(dlogits, dlogp, tr.logits, tr.targets, n, v)
	dhF := head.alloc(kernels.F32, n*h)
	be.MatMul(dhF, dlogits, m.W.LMHead, n, h, v, false, false, 1, 0)
	dx := be.Alloc(kernels.F32, n*h)
	defer be.Free(dx)
	be.RMSNormBackward(dx, dhF, tr.xFinal, m.W.Norm, tr.rstdF, n, h, false)
	head.free()
	for l := len(tr.layers) - 1; l >= 0; l-- {
		layer := &arena{be: be}
		tr.layerBackward(layer, l, dx, l > 0)
		layer.free()
	}
	if err := be.Sync(); err != nil {
		return fmt.Errorf("backward on %s: %w", be.Name(), err)
	}
	return nil
}

// layerBackward turns dx, the gradient of layer l's output, into the
// gradient of its input (when needInput; the first layer's input is the
// frozen embedding), accumulating LoRA gradients on the way.
func (tr *Trace) layerBackward(a *arena, l int, dx kernels.Buffer, needInput bool) {
	m, be, c := tr.m, tr.m.Backend, tr.m.Config
	s, w := tr.layers[l], &m.W.Layers[l]
	n, h, hd, inter := tr.n, c.HiddenSize, c.HeadDim, c.IntermediateSize
	q, kv := c.NumHeads*hd, c.NumKVHeads*hd
	f := func(k int) kernels.Buffer { return a.alloc(kernels.F32, k) }

	// MLP: xOut = xMid + down(swiglu(gate(h2), up(h2))), h2 = norm(xMid).
	dAct := f(n * inter)
	m.projectBackward(a, l, ProjDown, dAct, dx, s.act, w.Down, n, s.xa[ProjDown], false)
	dGate, dUp := f(n*inter), f(n*inter)
	be.SwiGLUBackward(dGate, dUp, dAct, s.gate, s.up, n*inter)
	dh2 := f(n * h)
	m.projectBackward(a, l, ProjGate, dh2, dGate, s.h2, w.Gate, n, s.xa[ProjGate], false)
	m.projectBackward(a, l, ProjUp, dh2, dUp, s.h2, w.Up, n, s.xa[ProjUp], true)
	be.RMSNormBackward(dx, dh2, s.xMid, w.PostAttnNorm, s.rstd2, n, h, true)

	// Attention: xMid = xIn + o(attn(rope(norm(q(h1))), rope(norm(k(h1))), v(h1))).
	dAttn := f(n * q)
	m.projectBackward(a, l, ProjO, dAttn, dx, s.attn, w.O, n, s.xa[ProjO], false)
	cacheLen := tr.cache.Slots * tr.cache.MaxLen * kv
	dq, dkC, dvC := f(n*q), f(cacheLen), f(cacheLen)
	be.AttentionBackward(dq, dkC, dvC, dAttn, s.attn, s.lse, s.q, tr.cache.K[l], tr.cache.V[l],
		tr.idx.slots, tr.idx.pos, n, c.NumHeads, c.NumKVHeads, hd, tr.cache.MaxLen, m.attnScale())
	dk, dv := f(n*kv), f(n*kv)
	be.GatherRows(dk, dkC, tr.cacheRows, n, kv)
	be.GatherRows(dv, dvC, tr.cacheRows, n, kv)
	be.RoPE(dq, tr.idx.pos, m.invFreq, n, c.NumHeads, hd, true)
	be.RoPE(dk, tr.idx.pos, m.invFreq, n, c.NumKVHeads, hd, true)
	if w.QNorm != nil {
		be.RMSNormBackward(dq, dq, s.qPre, w.QNorm, s.rstdQ, n*c.NumHeads, hd, false)
		be.RMSNormBackward(dk, dk, s.kPre, w.KNorm, s.rstdK, n*c.NumKVHeads, hd, false)
	}
	var dh1 kernels.Buffer
	if needInput {
		dh1 = f(n * h)
	}
	m.projectBackward(a, l, ProjQ, dh1, dq, s.h1, w.Q, n, s.xa[ProjQ], false)
	m.projectBackward(a, l, ProjK, dh1, dk, s.h1, w.K, n, s.xa[ProjK], true)
	m.projectBackward(a, l, ProjV, dh1, dv, s.h1, w.V, n, s.xa[ProjV], true)
	if needInput {
		be.RMSNormBackward(dx, dh1, s.xIn, w.InputNorm, s.rstd1, n, h, true)
	}
}

// projectBackward is the backward of project: given dy (n × out) it writes
// (or, with accumulate, adds) dx = dy·W + Scale·(dy·B)·A, skipped when dx is
// nil, and adds Scale·dyᵀ·xa into DB and Scale·(dy·B)ᵀ·x into DA.
func (m *Model) projectBackward(a *arena, layer int, p Proj, dx, dy, x, w kernels.Buffer, n int, xa kernels.Buffer, accumulate bool) {
	be := m.Backend
	inDim, outDim := m.Config.Dims(p)
	var beta float32
	if accumulate {
		beta = 1
	}
	if dx != nil {
		be.MatMul(dx, dy, w, n, inDim, outDim, false, false, 1, beta)
	}
	lr := m.lora(layer, p)
	if lr == nil {
		return
	}
	dyB := a.alloc(kernels.F32, n*lr.Rank)
	be.MatMul(dyB, dy, lr.B, n, lr.Rank, outDim, false, false, 1, 0)
	if dx != nil {
		be.MatMul(dx, dyB, lr.A, n, inDim, lr.Rank, false, false, lr.Scale, 1)
	}
	if lr.DB != nil {
		be.MatMul(lr.DB, dy, xa, outDim, lr.Rank, n, true, false, lr.Scale, 1)
	}
	if lr.DA != nil {
		be.MatMul(lr.DA, dyB, x, lr.Rank, inDim, n, true, false, lr.Scale, 1)
	}
}
