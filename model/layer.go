package model

import (
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// layerActs are one decoder layer's activations. For inference a single
// set is reused by every layer and the residual stream is updated in place
// (xIn, xMid and xOut are one buffer; statistics are not kept). For training
// each layer has its own set, keeping what its backward needs.
type layerActs struct {
	xIn, xMid, xOut kernels.Buffer // residual stream: n × hidden
	h1, h2          kernels.Buffer // normed inputs of attention and MLP
	rstd1, rstd2    kernels.Buffer // per-row 1/rms of the two norms (training)
	qPre, kPre      kernels.Buffer // projections before the Qwen3 q/k norm
	rstdQ, rstdK    kernels.Buffer // per-head 1/rms of the q/k norm (training)
	q, k, v         kernels.Buffer // after norm and RoPE
	attn, lse       kernels.Buffer // attention output (o_proj input) and its log-sum-exp
	o               kernels.Buffer // o_proj / down_proj output
	gate, up, act   kernels.Buffer // MLP pre-activations and SwiGLU output
	// fused receives a group's one GEMM before it is split into q/k/v or
	// gate/up: n × max(q + 2kv, 2·inter), one buffer shared by every layer
	// (training keeps it in the trace rather than allocating it per GEMM,
	// so the peak does not depend on where in the pass a scratch lives).
	fused kernels.Buffer
	xa    [NumProj]kernels.Buffer   // x·Aᵀ (n × rank) of o_proj and down_proj, for the backward
	xaT   [numGroups]kernels.Buffer // A·xᵀ (Σ ranks × n) of the q/k/v and gate/up groups
	// moe is the mixture-of-experts MLP's activations in a sparse layer
	// (the dense gate, up and act are nil then).
	moe *moeActs
}

// fusedWidth is the widest group's fused output.
func (c *Config) fusedWidth() int { return max(c.groupWidth(groupQKV), c.groupWidth(groupGateUp)) }

// inferenceActs allocates the one reusable set of activations, with x as
// the residual stream.
func (m *Model) inferenceActs(a *arena, x kernels.Buffer, n int) *layerActs {
	c := m.Config
	q, kv := c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	s := &layerActs{xIn: x, xMid: x, xOut: x,
		h1: a.alloc(kernels.F32, n*c.HiddenSize), o: a.alloc(kernels.F32, n*c.HiddenSize),
		q: a.alloc(kernels.F32, n*q), attn: a.alloc(kernels.F32, n*q),
		k: a.alloc(kernels.F32, n*kv), v: a.alloc(kernels.F32, n*kv),
		gate: a.alloc(kernels.F32, n*c.IntermediateSize), up: a.alloc(kernels.F32, n*c.IntermediateSize),
		fused: a.alloc(kernels.F32, n*c.fusedWidth()),
	}
	s.h2, s.qPre, s.kPre, s.act = s.h1, s.q, s.k, s.gate
	if c.SparseLayers() > 0 {
		s.moe = m.newMoEActs(a, a, -1, n, nil, nil, false)
	}
	return s
}

// trainingActs allocates a layer's own activations for the backward pass;
// fused is the trace's one scratch for the groups' GEMMs. The ones that
// drop recomputes in the backward (SwiGLU's output; attention's output and
// log-sum-exp) are left nil for the caller (recompute.go).
func (m *Model) trainingActs(a *arena, l int, xIn, fused kernels.Buffer, n int, drop Recompute) *layerActs {
	c := m.Config
	h, q, kv, inter := c.HiddenSize, c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim, c.IntermediateSize
	f := func(k int) kernels.Buffer { return a.alloc(kernels.F32, k) }
	s := &layerActs{xIn: xIn, xMid: f(n * h), xOut: f(n * h), h1: f(n * h), h2: f(n * h),
		rstd1: f(n), rstd2: f(n), q: f(n * q), k: f(n * kv), v: f(n * kv),
		fused: fused}
	if !c.IsSparse(l) {
		s.gate, s.up = f(n*inter), f(n*inter)
	}
	// o lives from a projection to the residual add that follows it, while
	// the groups' fused output is dead (split before, rewritten after), and
	// the backward never reads it: it is a view of fused. (A sparse layer's
	// experts write it from their own scratch, moeScratch.)
	if c.fusedWidth() >= h {
		s.o = fused.Slice(0, n*h)
	} else {
		s.o = f(n * h)
	}
	if drop < RecomputeSelective {
		s.attn, s.lse = f(n*q), f(n*c.NumHeads)
	}
	if drop < RecomputeSwiGLU && !c.IsSparse(l) {
		s.act = f(n * inter)
	}
	s.qPre, s.kPre = s.q, s.k
	if c.Arch().QKNorm {
		s.qPre, s.kPre, s.rstdQ, s.rstdK = f(n*q), f(n*kv), f(n*c.NumHeads), f(n*c.NumKVHeads)
	}
	for _, p := range []Proj{ProjO, ProjDown} {
		if lr := m.lora(l, p); lr != nil {
			s.xa[p] = f(n * lr.Rank)
		}
	}
	for g := range numGroups {
		if gl := m.groupLoRA(l, g); gl != nil {
			s.xaT[g] = f(gl.ranks * n)
		}
	}
	return s
}

// layerForward applies decoder layer l: xOut = layer(xIn), writing the
// layer's keys and values into cache.
func (m *Model) layerForward(a *arena, l int, cache *KVCache, idx batchIndex, n int, s *layerActs) {
	be, c, w := m.Backend, m.Config, &m.W.Layers[l]
	h, hd, eps := c.HiddenSize, c.HeadDim, float32(c.RMSNormEps)
	kv := c.NumKVHeads * hd

	be.RMSNorm(s.h1, s.rstd1, s.xIn, w.InputNorm, n, h, eps)
	m.projectGroup(a, l, groupQKV, []kernels.Buffer{s.qPre, s.kPre, s.v}, []kernels.Buffer{w.QBias, w.KBias, w.VBias},
		s.h1, w.QKV, s.fused, n, s.xaT[groupQKV])
	if w.QNorm != nil {
		be.RMSNorm(s.q, s.rstdQ, s.qPre, w.QNorm, n*c.NumHeads, hd, eps)
		be.RMSNorm(s.k, s.rstdK, s.kPre, w.KNorm, n*c.NumKVHeads, hd, eps)
	}
	be.RoPE(s.q, idx.pos, m.invFreq, n, c.NumHeads, hd, false)
	be.RoPE(s.k, idx.pos, m.invFreq, n, c.NumKVHeads, hd, false)
	be.KVWrite(cache.K[l], s.k, idx.slots, idx.pos, idx.pages, n, kv)
	be.KVWrite(cache.V[l], s.v, idx.slots, idx.pos, idx.pages, n, kv)
	m.attention(l, cache, idx, n, s)
	m.project(a, l, ProjO, s.o, s.attn, w.O, w.OBias, n, s.xa[ProjO])
	be.Add(s.xMid, s.xIn, s.o, n*h)

	be.RMSNorm(s.h2, s.rstd2, s.xMid, w.PostAttnNorm, n, h, eps)
	if w.MoE != nil {
		m.moeForward(l, s.moe, s.h2, s.o, n)
	} else {
		m.projectGroup(a, l, groupGateUp, []kernels.Buffer{s.gate, s.up}, []kernels.Buffer{nil, nil},
			s.h2, w.GateUp, s.fused, n, s.xaT[groupGateUp])
		be.SwiGLU(s.act, s.gate, s.up, n*c.IntermediateSize)
		m.project(a, l, ProjDown, s.o, s.act, w.Down, nil, n, s.xa[ProjDown])
	}
	be.Add(s.xOut, s.xMid, s.o, n*h)
}

// attention writes layer l's attention output and log-sum-exp from its
// queries and cache: the one call the forward and the backward's recompute
// (recompute.go) share, so both compute the same values.
func (m *Model) attention(l int, cache *KVCache, idx batchIndex, n int, s *layerActs) {
	c := m.Config
	m.Backend.Attention(s.attn, s.lse, s.q, cache.K[l], cache.V[l], idx.slots, idx.pos, idx.pages, n, c.NumHeads, c.NumKVHeads, c.HeadDim, m.attnScale())
}

func (m *Model) attnScale() float32 { return float32(1 / math.Sqrt(float64(m.Config.HeadDim))) }
