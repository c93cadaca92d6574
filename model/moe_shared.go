package model

import "github.com/grpo-dev/grpo/kernels"

// The shared expert of a Qwen3.5-MoE layer (HF
// Qwen3_5MoeSparseMoeBlock): every token also goes through a dense
// SwiGLU MLP, whose output is scaled by sigmoid(h·shared_expert_gateᵀ)
// and added to the routed experts' sum:
//
//	out[t] += σ(h_t·g) · down(silu(gate(h_t)) ⊙ up(h_t))
//
// The per-token scale is applied as a one-choice MoECombine (weights
// σ(s), rows the identity), the op that scales rows by per-token weights.

// sharedExpertActs are a sparse layer's shared-expert activations.
type sharedExpertActs struct {
	gateUp, act, y kernels.Buffer // n × 2·inter, n × inter, n × hidden
	score, scale   kernels.Buffer // n: h·gᵀ and σ of it
	ones           kernels.Buffer // n ones: SigmoidGate's x, so it yields σ itself
	rows           kernels.Buffer // n (I32): 0..n−1
	scaled         kernels.Buffer // n × hidden: σ·y, added into the layer's output
}

func (m *Model) newSharedExpertActs(a *arena, n int) *sharedExpertActs {
	c := m.Config
	si, h := c.SharedExpertIntermediateSize, c.HiddenSize
	f := func(k int) kernels.Buffer { return a.alloc(kernels.F32, k) }
	s := &sharedExpertActs{gateUp: f(n * 2 * si), act: f(n * si), y: f(n * h), score: f(n), scale: f(n),
		ones: f(n), rows: a.alloc(kernels.I32, n), scaled: f(n * h)}
	m.Backend.Fill(s.ones, 1, n)
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(i)
	}
	m.Backend.UploadI32(s.rows, ids)
	return s
}

// sharedExpertForward adds layer l's shared expert applied to h (n ×
// hidden) into out.
func (m *Model) sharedExpertForward(l int, s *sharedExpertActs, h, out kernels.Buffer, n int) {
	be, c, w := m.Backend, m.Config, m.W.Layers[l].MoE.Shared
	si, hd := c.SharedExpertIntermediateSize, c.HiddenSize
	be.MatMul(s.gateUp, h, w.GateUp, n, 2*si, hd, false, true, 1, 0)
	be.SwiGLURows(s.act, nil, s.gateUp, n, si)
	be.MatMul(s.y, s.act, w.Down, n, hd, si, false, true, 1, 0)
	be.MatMul(s.score, h, w.Scale, n, 1, hd, false, true, 1, 0)
	be.SigmoidGate(s.scale, s.ones, s.score, n)
	be.MoECombine(s.scaled, s.y, s.scale, s.rows, n, 1, hd)
	be.Add(out, out, s.scaled, n*hd)
}

// SharedExpertActWidth is the 4-byte elements per token of a sparse
// layer's shared-expert activations (newSharedExpertActs), 0 without a
// shared expert.
func (c *Config) SharedExpertActWidth() int {
	si := c.SharedExpertIntermediateSize
	if si == 0 {
		return 0
	}
	return 3*si + 2*c.HiddenSize + 4
}
