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
	// xa is x·Aᵀ of each adapted projection, sharedProjs' order, kept
	// for the backward (nil where not adapted).
	xa [len(sharedProjs)]kernels.Buffer
}

// sharedProjs are the shared expert's projections.
var sharedProjs = [...]Proj{ProjSharedGate, ProjSharedUp, ProjSharedDown, ProjSharedScale}

// sharedExpertSpecs lists layer l's shared-expert set for n tokens (with
// l < 0 the inference set, whose x·Aᵀ are of the largest rank any layer
// has: it serves every layer, and the static decode step has no arena
// for scratch).
func (c *Config) sharedExpertSpecs(s *sharedExpertActs, l, n int, ad *AdapterShape) bufSpecs {
	si, h := c.SharedExpertIntermediateSize, c.HiddenSize
	var b bufSpecs
	b.f32(&s.gateUp, n*2*si)
	b.f32(&s.act, n*si)
	b.f32(&s.y, n*h)
	if c.sharedExpertGated() {
		b.f32(&s.score, n)
		b.f32(&s.scale, n)
		b.f32(&s.ones, n)
		b.i32(&s.rows, n)
		b.f32(&s.scaled, n*h)
	}
	for i, p := range sharedProjs {
		b.f32(&s.xa[i], n*ad.rank(l, p))
	}
	return b
}

// initSharedExpertActs fills a new set's constants: ones and the identity
// rows.
func (m *Model) initSharedExpertActs(s *sharedExpertActs, n int) {
	if s.ones == nil { // ungated: no gate, no constants
		return
	}
	m.Backend.Fill(s.ones, 1, n)
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(i)
	}
	m.Backend.UploadI32(s.rows, ids)
}

// sharedExpertForward adds layer l's shared expert applied to h (n ×
// hidden) into out. a holds the LoRA scratch of an inference pass (whose
// acts keep no x·Aᵀ).
func (m *Model) sharedExpertForward(a *arena, l int, s *sharedExpertActs, h, out kernels.Buffer, n int) {
	be, c, w := m.Backend, m.Config, m.W.Layers[l].MoE.Shared
	si, hd := c.SharedExpertIntermediateSize, c.HiddenSize
	if c.relu2Experts() {
		// Nemotron-H's shared expert: down(relu(up(h))²), added ungated.
		m.project(a, l, ProjSharedUp, s.gateUp, h, nil, w.Up, nil, n, s.xa[1])
		be.ReLU2(s.act, s.gateUp, n*si)
		m.project(a, l, ProjSharedDown, s.y, s.act, nil, w.Down, nil, n, s.xa[2])
		be.Add(out, out, s.y, n*hd)
		return
	}
	be.MatMul(s.gateUp, h, w.GateUp, n, 2*si, hd, false, true, 1, 0)
	m.loraInto(a, l, ProjSharedGate, s.gateUp, 2*si, 0, h, n, s.xa[0])
	m.loraInto(a, l, ProjSharedUp, s.gateUp, 2*si, si, h, n, s.xa[1])
	if s.act.DType() == kernels.BF16 { // a bf16 layer's (moe.bf16Acts): the op's bf16 output alone
		be.SwiGLURows(nil, s.act, s.gateUp, n, si)
	} else {
		be.SwiGLURows(s.act, nil, s.gateUp, n, si)
	}
	m.project(a, l, ProjSharedDown, s.y, s.act, nil, w.Down, nil, n, s.xa[2])
	if w.Scale == nil { // GLM-4.5: added ungated
		be.Add(out, out, s.y, n*hd)
		return
	}
	m.project(a, l, ProjSharedScale, s.score, h, nil, w.Scale, nil, n, s.xa[3])
	be.SigmoidGate(s.scale, s.ones, s.score, n)
	be.MoECombine(s.scaled, s.y, s.scale, s.rows, n, 1, hd)
	be.Add(out, out, s.scaled, n*hd)
}

// sharedExpertGrads is a shared expert's backward scratch: the
// gradients of its output and scale, of SigmoidGate's inputs, of SwiGLU's
// output and of the gate/up GEMM's output, and dy·B of each adapted
// projection (sharedProjs' order).
type sharedExpertGrads struct {
	dy, dscale, dones, dscore kernels.Buffer
	dAct, dGateUp             kernels.Buffer
	dxa                       [len(sharedProjs)]kernels.Buffer
}

func (c *Config) sharedExpertGradSpecs(g *sharedExpertGrads, l, n int, ad *AdapterShape) bufSpecs {
	si := c.SharedExpertIntermediateSize
	var b bufSpecs
	if c.sharedExpertGated() {
		b.f32(&g.dy, n*c.HiddenSize)
		for _, dst := range []*kernels.Buffer{&g.dscale, &g.dones, &g.dscore} {
			b.f32(dst, n)
		}
	}
	b.f32(&g.dAct, n*si)
	b.f32(&g.dGateUp, n*2*si)
	for i, p := range sharedProjs {
		b.f32(&g.dxa[i], n*ad.Ranks[l][p])
	}
	return b
}

// sharedExpertBackward adds the shared expert's part of a sparse layer's
// backward: with dout the gradient of the layer's MLP output (n ×
// hidden), the gradient with respect to its input h is added into dh and
// the shared expert's adapters get their gradients; g is its scratch.
func (m *Model) sharedExpertBackward(l int, s *sharedExpertActs, g *sharedExpertGrads, dh, dout, h kernels.Buffer, n int) {
	be, c, w := m.Backend, m.Config, m.W.Layers[l].MoE.Shared
	si, hd := c.SharedExpertIntermediateSize, c.HiddenSize
	dy := dout // ungated (GLM-4.5): the output's gradient as it is
	if w.Scale != nil {
		dy = g.dy
		be.MoECombineBackward(g.dy, g.dscale, dout, s.y, s.scale, s.rows, n, 1, hd)
		be.SigmoidGateBackward(g.dones, g.dscore, g.dscale, s.ones, s.score, n)
	}
	m.projectBackward(l, ProjSharedDown, g.dAct, dy, s.act, w.Down, n, s.xa[2], g.dxa[2], false)
	if c.relu2Experts() {
		be.ReLU2Backward(g.dGateUp, g.dAct, s.gateUp, n*si)
		m.projectBackward(l, ProjSharedUp, dh, g.dGateUp, h, w.Up, n, s.xa[1], g.dxa[1], true)
		return
	}
	be.SwiGLURowsBackward(g.dGateUp, g.dAct, s.gateUp, n, si)
	be.MatMul(dh, g.dGateUp, w.GateUp, n, hd, 2*si, false, false, 1, 1)
	m.loraIntoBackward(l, ProjSharedGate, dh, g.dGateUp, 2*si, 0, h, n, s.xa[0], g.dxa[0])
	m.loraIntoBackward(l, ProjSharedUp, dh, g.dGateUp, 2*si, si, h, n, s.xa[1], g.dxa[1])
	if w.Scale != nil {
		m.projectBackward(l, ProjSharedScale, dh, g.dscore, h, w.Scale, n, s.xa[3], g.dxa[3], true)
	}
}

// SharedExpertActWidth is the 4-byte elements per token of a sparse
// layer's shared-expert activations (newSharedExpertActs), 0 without a
// shared expert.
func (c *Config) SharedExpertActWidth() int {
	si := c.SharedExpertIntermediateSize
	if si == 0 {
		return 0
	}
	if !c.sharedExpertGated() {
		return 3*si + c.HiddenSize
	}
	return 3*si + 2*c.HiddenSize + 4
}

// sharedExpertGated reports whether the shared expert's output is scaled
// by a sigmoid gate (Qwen3.5-MoE); GLM-4.5's is added as it is, and its
// sets hold no gate buffers.
func (c *Config) sharedExpertGated() bool { return !c.Arch().SigmoidRouter }
