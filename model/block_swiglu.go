package model

import "github.com/grpo-dev/grpo/kernels"

// swiGLU is the dense MLP of Llama, Qwen2 and Qwen3 (and of a MoE
// model's dense layers): down(silu(gate(h2)) ⊙ up(h2)), gate and up one
// fused GEMM (Layer.GateUp) whose output SwiGLURows reads in place.
type swiGLU struct{}

func (swiGLU) sparse() bool { return false }

func (swiGLU) loraTargets() []Proj { return []Proj{ProjGate, ProjUp, ProjDown} }

func (swiGLU) params(c *Config) int64 {
	return 3 * int64(c.HiddenSize) * int64(c.IntermediateSize)
}

func (swiGLU) projWeight(w *Layer, p Proj) kernels.Buffer {
	if p >= ProjGate && p <= ProjDown {
		return [...]kernels.Buffer{w.Gate, w.Up, w.Down}[p-ProjGate]
	}
	return nil
}

func (swiGLU) weightSpecs(c *Config, s []tensorSpec, w *Layer, p string) []tensorSpec {
	h, inter := c.HiddenSize, c.IntermediateSize
	gateUp := &fusedSpec{dst: &w.GateUp}
	s = appendMember(s, gateUp, p+"mlp.gate_proj.weight", []int{inter, h}, &w.Gate)
	s = appendMember(s, gateUp, p+"mlp.up_proj.weight", []int{inter, h}, &w.Up)
	return append(s, tensorSpec{name: p + "mlp.down_proj.weight", shape: []int{h, inter}, dst: &w.Down})
}

// weightBuffers: Gate and Up are views of GateUp.
func (swiGLU) weightBuffers(w *Layer) []*kernels.Buffer { return []*kernels.Buffer{&w.GateUp, &w.Down} }

func (swiGLU) resliceWeights(_ *Config, w *Layer) {
	ng := w.Gate.Len()
	w.Gate, w.Up = w.GateUp.Slice(0, ng), w.GateUp.Slice(ng, w.Up.Len())
}

// normCast: the gate/up GEMM reads the post norm's bf16 cast.
func (swiGLU) normCast(s *layerActs) kernels.Buffer { return s.h2b }

// inferenceSpecs: SwiGLU's output (gate/up's is the shared fused buffer).
func (swiGLU) inferenceSpecs(c *Config, s *layerActs, n int, _ *AdapterShape) (acts, experts bufSpecs) {
	acts.f32(&s.act, n*c.IntermediateSize)
	return acts, nil
}

func (swiGLU) finishInference(_ *Model, s *layerActs, _ int) { s.gateUp = s.fused }

// loraSpecs: down_proj's x·Aᵀ and the gate/up group's.
func (swiGLU) loraSpecs(c *Config, s *layerActs, l, n int, ad *AdapterShape) bufSpecs {
	var sp bufSpecs
	sp.f32(&s.xa[ProjDown], n*ad.rank(l, ProjDown))
	sp.f32(&s.xaG[groupGateUp], n*ad.groupRank(l, groupGateUp))
	return sp
}

// trainingSpecs: the gate/up GEMM's output, SwiGLU's unless dropped, the
// adapters' x·Aᵀ.
func (b swiGLU) trainingSpecs(c *Config, s *layerActs, l, n int, ad *AdapterShape, drop Recompute) bufSpecs {
	var sp bufSpecs
	sp.f32(&s.gateUp, n*2*c.IntermediateSize)
	if drop < RecomputeSwiGLU {
		sp = append(sp, b.droppedSpecs(c, s, n, RecomputeSwiGLU)...)
	}
	return append(sp, b.loraSpecs(c, s, l, n, ad)...)
}

// droppedSpecs: swiglu and finer recompute SwiGLU's output.
func (swiGLU) droppedSpecs(c *Config, s *layerActs, n int, p Recompute) bufSpecs {
	var sp bufSpecs
	if p >= RecomputeSwiGLU {
		sp.f32(&s.act, n*c.IntermediateSize)
	}
	return sp
}

func (swiGLU) dropKept(k *layerActs, p Recompute) {
	if p >= RecomputeSwiGLU {
		k.act, k.actb = nil, nil
	}
}

func (swiGLU) traceActs(*Model, *arena, *arena, int, int, *layerActs, *AdapterShape, kernels.Buffer, *moeScratch, bool, Recompute) {
}

func (swiGLU) traceBytes(*Config, int, int, *AdapterShape, bool, kernels.DType) channelTraceBytes {
	return channelTraceBytes{}
}

func (swiGLU) keepCheckpointed(*Model, *layerActs, *layerActs) {}

func (swiGLU) rerunActs(*Model, *arena, int, int, *layerActs, *layerActs, *AdapterShape, *moeScratch) {
}

func (swiGLU) gradSpecs(c *Config, g *layerGrads, l, n int, ad *AdapterShape) bufSpecs {
	return c.mlpGradSpecs(&g.mlp, l, n, ad)
}

func (swiGLU) forward(m *Model, a *arena, l int, s *layerActs, n int) {
	w := &m.W.Layers[l]
	m.projectGroup(a, l, groupGateUp, s.gateUp, s.h2, s.h2b, w.GateUp, n, s.xaG[groupGateUp])
	m.Backend.SwiGLURows(s.act, s.actb, s.gateUp, n, m.Config.IntermediateSize)
	m.project(a, l, ProjDown, s.o, s.act, s.actb, w.Down, nil, n, s.xa[ProjDown])
}

// recompute: every policy but none reruns SwiGLU (the bf16 cast fed
// only the forward's down_proj GEMM).
func (swiGLU) recompute(m *Model, _ int, s *layerActs, n int, p Recompute) {
	if p < RecomputeSwiGLU {
		return
	}
	var cast kernels.Buffer
	if s.act == nil {
		cast = s.actb // a bf16 layer keeps the bf16 copy only (trace_acts.go)
	}
	m.Backend.SwiGLURows(s.act, cast, s.gateUp, n, m.Config.IntermediateSize)
}

func (swiGLU) backward(tr *Trace, l int, s *layerActs, g *layerGrads, dx kernels.Buffer) kernels.Buffer {
	tr.mlpBackward(l, s, &g.mlp, dx)
	return g.mlp.dh2
}

// mlpBackward is the dense MLP's backward: dx, the gradient of its
// output, becomes g.dh2, the gradient of its input h2.
func (tr *Trace) mlpBackward(l int, s *layerActs, g *mlpGrads, dx kernels.Buffer) {
	m, be, c := tr.m, tr.m.Backend, tr.m.Config
	w := &m.W.Layers[l]
	n, h, inter := tr.n, c.HiddenSize, c.IntermediateSize
	// MLP: xOut = xMid + down(swiglu(gate(h2), up(h2))), h2 = norm(xMid);
	// gate and up are the halves of the fused gateUp, and so are their
	// gradients: the base part of dh2 is one GEMM with the fused weight.
	m.projectBackward(l, ProjDown, g.dAct, dx, keptInput(s.act, s.actb), w.Down, n, s.xa[ProjDown], g.dxaDown, false)
	be.SwiGLURowsBackward(g.dGateUp, g.dAct, s.gateUp, n, inter)
	be.MatMul(g.dh2, g.dGateUp, w.GateUp, n, h, 2*inter, false, false, 1, 0)
	m.loraGroupBackward(l, groupGateUp, g.dh2, keptInput(s.h2, s.h2b), n, s.xaG[groupGateUp], g.dxaGateUp, func(i int) (kernels.Buffer, int, int) {
		return g.dGateUp, 2 * inter, i * inter
	})
}

// mlpGrads is a dense MLP's backward scratch: the gradients of SwiGLU's
// output, of the gate/up GEMM's output and of the MLP's input h2, and
// dy·B of down_proj's and the gate/up group's adapters.
type mlpGrads struct {
	dAct, dGateUp, dh2 kernels.Buffer
	dxaDown, dxaGateUp kernels.Buffer
}

func (c *Config) mlpGradSpecs(g *mlpGrads, l, n int, ad *AdapterShape) bufSpecs {
	inter := c.IntermediateSize
	var b bufSpecs
	b.f32(&g.dAct, n*inter)
	b.f32(&g.dGateUp, n*2*inter)
	b.f32(&g.dh2, n*c.HiddenSize)
	b.f32(&g.dxaDown, n*ad.Ranks[l][ProjDown])
	b.f32(&g.dxaGateUp, n*ad.groupRanks(l, groupGateUp))
	return b
}

// bf16Acts: the gate/up output, SwiGLU's output as its bf16 copy only,
// and the backward's gradients.
func (swiGLU) bf16Acts(_ *Config, s *layerActs, g *layerGrads) (bf16Acts, bool) {
	m := &g.mlp
	return bf16Acts{bufs: []*kernels.Buffer{&s.gateUp, &m.dAct, &m.dGateUp, &m.dh2},
		swaps: [][2]*kernels.Buffer{{&s.act, &s.actb}}}, true
}
