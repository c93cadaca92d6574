package model

import (
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// attention is full causal attention over the layer's paged KV cache, as
// HF's LlamaAttention / Qwen3Attention / Qwen3_5Attention compute it:
// q, k, v from one fused GEMM of the normed input (GQA: fewer key/value
// heads than query heads), optional biases, an optional per-head RMSNorm
// of q and k (Qwen3), RoPE over all or part of each head (rotary_dim),
// softmax attention, an optional output gate (Qwen3.5: o_proj reads
// attn × sigmoid(gate), the gate being the second half of each q_proj
// head), and o_proj. The variants that change its buffers or weights are
// its fields; the rest (the rotary width, absent biases and norms as nil
// buffers) the kernels take from the config and weights.
type attention struct {
	outputGate bool // q_proj is [query | gate] per head
	qkNorm     bool // per-head RMSNorm of q and k before RoPE
	qkvBias    bool // q/k/v projections carry biases
	oBias      bool // o_proj carries a bias
}

func (attention) cacheKind() TokenMixer { return MixAttention }

func (attention) loraTargets() []Proj { return []Proj{ProjQ, ProjK, ProjV, ProjO} }

// params: q (twice as wide with an output gate), k, v and o, the q/k
// norms and the biases.
func (b attention) params(c *Config) int64 {
	h, hd := int64(c.HiddenSize), int64(c.HeadDim)
	q, kv := int64(c.NumHeads)*hd, int64(c.NumKVHeads)*hd
	_, qOut := c.Dims(ProjQ)
	n := h*int64(qOut) + 2*h*kv + q*h
	if b.qkNorm {
		n += 2 * hd
	}
	if b.qkvBias {
		n += int64(qOut) + 2*kv
	}
	if b.oBias {
		n += h
	}
	if c.AttentionSinks {
		n += int64(c.NumHeads)
	}
	return n
}

func (attention) gemmWeight(w *Layer) kernels.Buffer { return w.QKV }

func (attention) projWeight(w *Layer, p Proj) kernels.Buffer {
	if p <= ProjO {
		return [...]kernels.Buffer{w.Q, w.K, w.V, w.O}[p]
	}
	return nil
}

func (b attention) weightSpecs(c *Config, s []tensorSpec, w *Layer, p string) (out, tail []tensorSpec) {
	h, q, kv := c.HiddenSize, c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	_, qOut := c.Dims(ProjQ)
	qkv := &fusedSpec{dst: &w.QKV}
	s = appendMember(s, qkv, p+"self_attn.q_proj.weight", []int{qOut, h}, &w.Q)
	s = appendMember(s, qkv, p+"self_attn.k_proj.weight", []int{kv, h}, &w.K)
	s = appendMember(s, qkv, p+"self_attn.v_proj.weight", []int{kv, h}, &w.V)
	s = append(s, tensorSpec{name: p + "self_attn.o_proj.weight", shape: []int{h, q}, dst: &w.O})
	if b.qkvBias {
		tail = append(tail,
			tensorSpec{name: p + "self_attn.q_proj.bias", shape: []int{qOut}, dst: &w.QBias},
			tensorSpec{name: p + "self_attn.k_proj.bias", shape: []int{kv}, dst: &w.KBias},
			tensorSpec{name: p + "self_attn.v_proj.bias", shape: []int{kv}, dst: &w.VBias})
	}
	if b.oBias {
		tail = append(tail, tensorSpec{name: p + "self_attn.o_proj.bias", shape: []int{h}, dst: &w.OBias})
	}
	if b.qkNorm {
		norm := c.Arch().ZeroCentredNorm
		tail = append(tail,
			tensorSpec{name: p + "self_attn.q_norm.weight", shape: []int{c.HeadDim}, dst: &w.QNorm, plusOne: norm},
			tensorSpec{name: p + "self_attn.k_norm.weight", shape: []int{c.HeadDim}, dst: &w.KNorm, plusOne: norm})
	}
	if c.AttentionSinks {
		// The sinks join the softmax's f32 arithmetic as they are.
		tail = append(tail, tensorSpec{name: p + "self_attn.sinks", shape: []int{c.NumHeads}, dst: &w.Sinks, f32: true})
	}
	return s, tail
}

// weightBuffers: Q, K and V are views of QKV.
func (attention) weightBuffers(w *Layer) []*kernels.Buffer {
	return []*kernels.Buffer{&w.QKV, &w.O, &w.QBias, &w.KBias, &w.VBias, &w.OBias, &w.QNorm, &w.KNorm, &w.Sinks}
}

func (attention) resliceWeights(_ *Config, w *Layer) {
	nq, nk := w.Q.Len(), w.K.Len()
	w.Q, w.K, w.V = w.QKV.Slice(0, nq), w.QKV.Slice(nq, nk), w.QKV.Slice(nq+nk, w.V.Len())
}

// inferenceSpecs: q after norm and RoPE, attention's output, and the
// output gate's pre-activation.
func (b attention) inferenceSpecs(c *Config, s *layerActs, n int, _ *AdapterShape) bufSpecs {
	q := c.NumHeads * c.HeadDim
	var sp bufSpecs
	sp.f32(&s.q, n*q)
	sp.f32(&s.attn, n*q)
	if b.outputGate {
		sp.f32(&s.gate, n*q)
	}
	return sp
}

// finishInference: the gated output is attn itself (inference keeps no
// pre-gate output).
func (attention) finishInference(s *layerActs) { s.gated = s.attn }

// loraSpecs: o_proj's x·Aᵀ and the q/k/v group's.
func (attention) loraSpecs(c *Config, s *layerActs, l, n int, ad *AdapterShape) bufSpecs {
	var sp bufSpecs
	sp.f32(&s.xa[ProjO], n*ad.rank(l, ProjO))
	sp.f32(&s.xaG[groupQKV], n*ad.groupRank(l, groupQKV))
	return sp
}

// trainingSpecs: q (in attn, the caches' dtype: AttentionInputs writes
// it so), and unless dropped attention's output, log-sum-exp and gated
// output; the output gate's pre-activation; q and k before their norm
// and its statistics; the adapters' x·Aᵀ.
func (b attention) trainingSpecs(c *Config, s *layerActs, l, n int, ad *AdapterShape, drop Recompute, attn kernels.DType) bufSpecs {
	q, kv := c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	var sp bufSpecs
	sp.add(&s.q, attn, n*q)
	if drop < RecomputeSelective {
		sp = append(sp, b.droppedSpecs(c, s, n, RecomputeSelective)...)
	}
	if b.outputGate {
		sp.f32(&s.gate, n*q)
	}
	if b.qkNorm {
		sp.f32(&s.qPre, n*q)
		sp.f32(&s.kPre, n*kv)
		sp.f32(&s.rstdQ, n*c.NumHeads)
		sp.f32(&s.rstdK, n*c.NumKVHeads)
	}
	return append(sp, b.loraSpecs(c, s, l, n, ad)...)
}

// droppedSpecs: selective recomputes attention's output, log-sum-exp and
// gated output.
func (b attention) droppedSpecs(c *Config, s *layerActs, n int, p Recompute) bufSpecs {
	var sp bufSpecs
	if p >= RecomputeSelective {
		q := c.NumHeads * c.HeadDim
		sp.f32(&s.attn, n*q)
		sp.f32(&s.lse, n*c.NumHeads)
		if b.outputGate {
			sp.f32(&s.gated, n*q)
		}
	}
	return sp
}

func (attention) dropKept(k *layerActs, p Recompute) {
	if p >= RecomputeSelective {
		k.attn, k.lse, k.gated = nil, nil, nil
	}
}

func (attention) gradSpecs(c *Config, g *layerGrads, l, n, cacheRows, _ int, ad *AdapterShape, needInput bool) bufSpecs {
	return c.attentionGradSpecs(&g.attn, l, n, cacheRows, ad, needInput)
}

// forward: the q/k/v GEMM, AttentionInputs (biases, q/k norm, RoPE; k
// and v into the cache), attention, the output gate, o_proj.
func (attention) forward(m *Model, a *arena, l int, cache *KVCache, idx batchIndex, n int, s *layerActs) {
	be, c, w := m.Backend, m.Config, &m.W.Layers[l]
	hd, eps := c.HeadDim, float32(c.RMSNormEps)
	m.projectGroup(a, l, groupQKV, s.fused, s.h1, s.h1b, w.QKV, n, s.xaG[groupQKV])
	be.AttentionInputs(s.q, s.gate, s.qPre, s.kPre, s.rstdQ, s.rstdK, cache.K[l], cache.V[l], s.fused, w.QBias, w.KBias, w.VBias, w.QNorm, w.KNorm,
		m.invFreq, idx.slots, idx.pos, idx.pagesFor(cache, l), n, c.NumHeads, c.NumKVHeads, hd, c.RotaryDim(), eps)
	m.attention(l, cache, idx, n, s)
	oIn := s.attn
	if s.gate != nil {
		// Qwen3.5's output gate: attention's output × sigmoid(gate),
		// o_proj's input.
		be.SigmoidGate(s.gated, s.attn, s.gate, n*c.NumHeads*hd)
		oIn = s.gated
	}
	m.project(a, l, ProjO, s.o, oIn, nil, w.O, w.OBias, n, s.xa[ProjO])
}

// recompute: selective reruns attention from the kept q and cache, and
// the output gate.
func (attention) recompute(m *Model, l int, cache *KVCache, idx batchIndex, n int, s *layerActs, p Recompute) {
	if p < RecomputeSelective {
		return
	}
	c := m.Config
	m.attention(l, cache, idx, n, s)
	if s.gate != nil {
		m.Backend.SigmoidGate(s.gated, s.attn, s.gate, n*c.NumHeads*c.HeadDim)
	}
}

func (attention) backward(tr *Trace, l int, s *layerActs, g *layerGrads, dx kernels.Buffer, needInput bool) kernels.Buffer {
	tr.attentionBackward(l, s, &g.attn, dx, needInput)
	return g.attn.dh1
}

// attention writes layer l's attention output and log-sum-exp from its
// queries and cache: the one call the forward and the backward's recompute
// share, so both compute the same values.
//
// A layer in the cache's sliding pool reads its own table and runs plain
// Attention: the groups are derived from the full layers' table, and a
// window reads few blocks, shared or not.
func (m *Model) attention(l int, cache *KVCache, idx batchIndex, n int, s *layerActs) {
	c := m.Config
	if idx.groups != nil && !cache.windowed(l) {
		m.Backend.AttentionSharedPrefix(s.attn, s.lse, s.q, cache.K[l], cache.V[l], idx.slots, idx.pos, idx.groups, idx.pages, n, c.NumHeads, c.NumKVHeads, c.HeadDim, m.attnScale(), m.attnVariant(l))
		return
	}
	m.Backend.Attention(s.attn, s.lse, s.q, cache.K[l], cache.V[l], idx.slots, idx.pos, idx.pagesFor(cache, l), n, c.NumHeads, c.NumKVHeads, c.HeadDim, m.attnScale(), m.attnVariant(l))
}

// attnScale is the softmax scale 1/√head_dim, times the square of the
// rotary embedding's attention factor (YaRN's), which transformers
// multiplies into both q's and k's cos and sin.
func (m *Model) attnScale() float32 {
	f := m.Config.RopeAttentionFactor()
	return float32(f * f / math.Sqrt(float64(m.Config.HeadDim)))
}

// attentionBackward is the attention block's backward: dx, the gradient
// of its output, becomes g.dh1, the gradient of its input h1 (when
// needInput).
func (tr *Trace) attentionBackward(l int, s *layerActs, g *attentionGrads, dx kernels.Buffer, needInput bool) {
	m, be, c := tr.m, tr.m.Backend, tr.m.Config
	w := &m.W.Layers[l]
	n, h, hd := tr.n, c.HiddenSize, c.HeadDim
	q := c.NumHeads * hd

	// Attention: xMid = xIn + o(attn(rope(norm(q(h1))), rope(norm(k(h1))), v(h1))).
	if s.gate != nil {
		// o_proj read attn × sigmoid(gate).
		m.projectBackward(l, ProjO, g.dGated, dx, s.gated, w.O, n, s.xa[ProjO], g.dxaO, false)
		be.SigmoidGateBackward(g.dAttn, g.dGate, g.dGated, s.attn, s.gate, n*q)
	} else {
		m.projectBackward(l, ProjO, g.dAttn, dx, s.attn, w.O, n, s.xa[ProjO], g.dxaO, false)
	}
	be.AttentionBackward(g.dq, g.dk, g.dv, g.dAttn, s.attn, s.lse, s.q, tr.cache.K[l], tr.cache.V[l],
		tr.idx.slots, tr.idx.pos, tr.idx.pagesFor(tr.cache, l), n, c.NumHeads, c.NumKVHeads, hd, m.attnScale(), m.attnVariant(l))
	// q, k and v's gradients join in the fused layout (AttentionInputs'
	// backward), so the base part of dh1 is one GEMM with the fused
	// weight and the LoRA part reads them in place.
	width := c.groupWidth(groupQKV)
	be.AttentionInputsBackward(g.dQKV, g.dq, g.dGate, g.dk, g.dv, s.qPre, s.kPre, s.rstdQ, s.rstdK, w.QNorm, w.KNorm, m.invFreq,
		tr.idx.slots, tr.idx.pos, tr.idx.pagesFor(tr.cache, l), n, c.NumHeads, c.NumKVHeads, hd, c.RotaryDim())
	if needInput {
		be.MatMul(g.dh1, g.dQKV, w.QKV, n, h, width, false, false, 1, 0)
	}
	m.loraGroupBackward(l, groupQKV, g.dh1, keptInput(s.h1, s.h1b), n, s.xaG[groupQKV], g.dxaQKV, func(i int) (kernels.Buffer, int, int) {
		return g.dQKV, width, c.groupOffset(groupQKV, i)
	})
}

// attentionGrads is an attention block's backward scratch: the gradients
// of attention's output (and, with an output gate, of o_proj's gated input
// and the gate), of q, of the layer's cache-shaped keys and values, of the
// fused q/k/v output and of the block's input h1 (when needed), and dy·B
// of o_proj's and the q/k/v group's adapters.
type attentionGrads struct {
	dAttn, dGated, dGate kernels.Buffer
	dq, dk, dv           kernels.Buffer
	dQKV, dh1            kernels.Buffer
	dxaO, dxaQKV         kernels.Buffer
}

func (c *Config) attentionGradSpecs(g *attentionGrads, l, n, cacheRows int, ad *AdapterShape, needInput bool) bufSpecs {
	q := c.NumHeads * c.HeadDim
	var b bufSpecs
	b.f32(&g.dAttn, n*q)
	if c.Arch().OutputGate {
		b.f32(&g.dGated, n*q)
		b.f32(&g.dGate, n*q)
	}
	b.f32(&g.dq, n*q)
	b.f32(&g.dk, cacheRows*c.KVWidth())
	b.f32(&g.dv, cacheRows*c.KVWidth())
	b.f32(&g.dQKV, n*c.groupWidth(groupQKV))
	if needInput {
		b.f32(&g.dh1, n*c.HiddenSize)
	}
	b.f32(&g.dxaO, n*ad.Ranks[l][ProjO])
	b.f32(&g.dxaQKV, n*ad.groupRanks(l, groupQKV))
	return b
}

// bf16Acts: attention's output (and the gated output and its gate), q
// and k before their norm, and the backward's gradients but the caches';
// with sinks and an o_proj bias too (gpt-oss), which the attention
// kernels and AddBias take beside bf16 operands.
func (b attention) bf16Acts(c *Config, s *layerActs, g *layerGrads) (bf16Acts, bool) {
	a := &g.attn
	return bf16Acts{bufs: []*kernels.Buffer{&s.attn, &s.gated, &s.gate, &s.qPre, &s.kPre,
		&a.dAttn, &a.dGated, &a.dGate, &a.dq, &a.dQKV, &a.dh1}}, true
}
