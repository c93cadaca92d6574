package model

import "github.com/grpo-dev/grpo/kernels"

// relu2MLP is Nemotron-H's dense MLP (NemotronHMLP, its "-" layers):
// down(relu(up(h2))²), no gate. up's output is gateUp (n × inter, the
// dense MLP's GEMM output field), relu²'s act.
type relu2MLP struct{}

func (relu2MLP) sparse() bool { return false }

func (relu2MLP) loraTargets() []Proj { return []Proj{ProjUp, ProjDown} }

func (relu2MLP) params(c *Config) int64 { return 2 * int64(c.HiddenSize) * int64(c.IntermediateSize) }

func (relu2MLP) projWeight(w *Layer, p Proj) kernels.Buffer {
	switch p {
	case ProjUp:
		return w.Up
	case ProjDown:
		return w.Down
	}
	return nil
}

func (relu2MLP) weightSpecs(c *Config, s []tensorSpec, w *Layer, p string) []tensorSpec {
	h, inter := c.HiddenSize, c.IntermediateSize
	return append(s, tensorSpec{name: p + "mlp.up_proj.weight", shape: []int{inter, h}, dst: &w.Up},
		tensorSpec{name: p + "mlp.down_proj.weight", shape: []int{h, inter}, dst: &w.Down})
}

func (relu2MLP) weightBuffers(w *Layer) []*kernels.Buffer { return []*kernels.Buffer{&w.Up, &w.Down} }

func (relu2MLP) resliceWeights(*Config, *Layer) {}

func (relu2MLP) normCast(s *layerActs) kernels.Buffer { return s.h2b }

// inferenceSpecs: up's output and relu²'s, and both adapters' x·Aᵀ at
// the largest rank.
func (b relu2MLP) inferenceSpecs(c *Config, s *layerActs, n int, ad *AdapterShape) (acts, experts bufSpecs) {
	acts.f32(&s.gateUp, n*c.IntermediateSize)
	acts.f32(&s.act, n*c.IntermediateSize)
	return acts, nil
}

func (relu2MLP) finishInference(*Model, *layerActs, int) {}

func (relu2MLP) loraSpecs(c *Config, s *layerActs, l, n int, ad *AdapterShape) bufSpecs {
	var sp bufSpecs
	sp.f32(&s.xa[ProjUp], n*ad.rank(l, ProjUp))
	sp.f32(&s.xa[ProjDown], n*ad.rank(l, ProjDown))
	return sp
}

// trainingSpecs: up's output, relu²'s (which no policy drops: one
// elementwise op costs less to keep than to plan), the adapters' x·Aᵀ.
func (b relu2MLP) trainingSpecs(c *Config, s *layerActs, l, n int, ad *AdapterShape, _ Recompute) bufSpecs {
	var sp bufSpecs
	sp.f32(&s.gateUp, n*c.IntermediateSize)
	sp.f32(&s.act, n*c.IntermediateSize)
	return append(sp, b.loraSpecs(c, s, l, n, ad)...)
}

func (relu2MLP) droppedSpecs(*Config, *layerActs, int, Recompute) bufSpecs { return nil }

func (relu2MLP) dropKept(*layerActs, Recompute) {}

func (relu2MLP) traceActs(*Model, *arena, *arena, int, int, *layerActs, *AdapterShape, kernels.Buffer, *moeScratch, bool, Recompute) {
}

func (relu2MLP) traceBytes(*Config, int, int, *AdapterShape, bool, kernels.DType) channelTraceBytes {
	return channelTraceBytes{}
}

func (relu2MLP) keepCheckpointed(*Model, *layerActs, *layerActs) {}

func (relu2MLP) rerunActs(*Model, *arena, int, int, *layerActs, *layerActs, *AdapterShape, *moeScratch) {
}

func (relu2MLP) gradSpecs(c *Config, g *layerGrads, l, n int, ad *AdapterShape) bufSpecs {
	inter := c.IntermediateSize
	var b bufSpecs
	b.f32(&g.mlp.dAct, n*inter)
	b.f32(&g.mlp.dGateUp, n*inter) // up's output's gradient
	b.f32(&g.mlp.dh2, n*c.HiddenSize)
	b.f32(&g.mlp.dxaDown, n*ad.Ranks[l][ProjDown])
	b.f32(&g.mlp.dxaGateUp, n*ad.Ranks[l][ProjUp])
	return b
}

func (relu2MLP) forward(m *Model, a *arena, l int, s *layerActs, n int) {
	w := &m.W.Layers[l]
	m.project(a, l, ProjUp, s.gateUp, s.h2, s.h2b, w.Up, nil, n, s.xa[ProjUp])
	m.Backend.ReLU2(s.act, s.gateUp, n*m.Config.IntermediateSize)
	m.project(a, l, ProjDown, s.o, s.act, nil, w.Down, nil, n, s.xa[ProjDown])
}

// bf16Acts: up's output, relu²'s and the backward's gradients.
func (relu2MLP) bf16Acts(_ *Config, s *layerActs, g *layerGrads) (bf16Acts, bool) {
	m := &g.mlp
	return bf16Acts{bufs: []*kernels.Buffer{&s.gateUp, &s.act, &m.dAct, &m.dGateUp, &m.dh2}}, true
}

func (relu2MLP) recompute(*Model, int, *layerActs, int, Recompute) {}

func (relu2MLP) backward(tr *Trace, l int, s *layerActs, g *layerGrads, dx kernels.Buffer) kernels.Buffer {
	m, w, n, d := tr.m, &tr.m.W.Layers[l], tr.n, &g.mlp
	m.projectBackward(l, ProjDown, d.dAct, dx, s.act, w.Down, n, s.xa[ProjDown], d.dxaDown, false)
	m.Backend.ReLU2Backward(d.dGateUp, d.dAct, s.gateUp, n*m.Config.IntermediateSize)
	m.projectBackward(l, ProjUp, d.dh2, d.dGateUp, keptInput(s.h2, s.h2b), w.Up, n, s.xa[ProjUp], d.dxaGateUp, false)
	return d.dh2
}
