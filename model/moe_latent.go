package model

import "github.com/grpo-dev/grpo/kernels"

// The latent MoE of Nemotron-3-Super (transformers' NemotronHMoE with
// moe_latent_size set): the routed experts run in a latent space of
// moe_latent_size columns between two dense projections, while the
// router and the shared expert read the hidden state itself:
//
//	x = h·fc1_latent_projᵀ                       (n × latent)
//	out = (Σ_j w_tj · expert_j(x_t))·fc2_latent_projᵀ + shared(h)
//
// fc2 is linear without a bias, so applying it after the weighted sum
// (as transformers does) is applying it to each expert's output. The
// experts' gathered rows, their outputs and an expert-parallel group's
// all-to-all rows are latent wide (ExpertWidth). Both projections are
// nn.Linear modules, so PEFT's all-linear adapts them (ProjLatentIn,
// ProjLatentOut).

// latentParams is a sparse layer's two latent projections' parameters
// (0 without a latent MoE).
func (c *Config) latentParams() int64 {
	return 2 * int64(c.HiddenSize) * int64(c.MoELatent())
}

// latentSpecs appends a latent MoE's fc1_latent_proj and fc2_latent_proj
// (under mlp., which renameNemotron makes mixer.) to s; none without one.
func (c *Config) latentSpecs(s []tensorSpec, mw *MoEWeights, prefix string) []tensorSpec {
	h, lat := c.HiddenSize, c.MoELatent()
	if lat == 0 {
		return s
	}
	return append(s, tensorSpec{name: prefix + "mlp.fc1_latent_proj.weight", shape: []int{lat, h}, dst: &mw.LatentIn},
		tensorSpec{name: prefix + "mlp.fc2_latent_proj.weight", shape: []int{h, lat}, dst: &mw.LatentOut})
}

// latentSpecs lists a sparse layer's latent activations for n tokens:
// the experts' input x and their weighted sum (each n × latent), which
// the backward reads as the projections' inputs, and each adapted
// projection's x·Aᵀ (l < 0: the largest rank, for the inference set).
func (c *Config) latentActSpecs(s *moeActs, l, n int, ad *AdapterShape) bufSpecs {
	lat := c.MoELatent()
	var b bufSpecs
	if lat == 0 {
		return b
	}
	b.f32(&s.latentIn, n*lat)
	b.f32(&s.latentOut, n*lat)
	for _, p := range []Proj{ProjLatentIn, ProjLatentOut} {
		b.f32(&s.xa[p], n*ad.rank(l, p))
	}
	return b
}

// latentGradSpecs lists the latent projections' backward scratch: the
// gradients of the experts' input and of their weighted sum, and dy·B of
// each adapted projection.
func (c *Config) latentGradSpecs(g *moeGrads, l, n int, ad *AdapterShape) bufSpecs {
	lat := c.MoELatent()
	var b bufSpecs
	if lat == 0 {
		return b
	}
	b.f32(&g.dLatentIn, n*lat)
	b.f32(&g.dLatentOut, n*lat)
	for _, p := range []Proj{ProjLatentIn, ProjLatentOut} {
		b.f32(&g.dyB[p], n*ad.Ranks[l][p])
	}
	return b
}

// latentForwardIn returns the rows the experts read: h itself, or with a
// latent MoE h·fc1ᵀ (+ its adapter), written into s.latentIn; and where
// they write their weighted sum: out, or s.latentOut.
func (m *Model) latentForwardIn(a *arena, l int, s *moeActs, h, out kernels.Buffer, n int) (x, sum kernels.Buffer) {
	if s.latentIn == nil {
		return h, out
	}
	m.project(a, l, ProjLatentIn, s.latentIn, h, nil, m.W.Layers[l].MoE.LatentIn, nil, n, s.xa[ProjLatentIn])
	return s.latentIn, s.latentOut
}

// latentForwardOut writes out = s.latentOut·fc2ᵀ (+ its adapter), the
// routed experts' part of the layer's output; nothing without a latent
// MoE (the experts wrote out themselves).
func (m *Model) latentForwardOut(a *arena, l int, s *moeActs, out kernels.Buffer, n int) {
	if s.latentOut == nil {
		return
	}
	m.project(a, l, ProjLatentOut, out, s.latentOut, nil, m.W.Layers[l].MoE.LatentOut, nil, n, s.xa[ProjLatentOut])
}

// latentBackwardOut turns dout, the gradient of the layer's output, into
// the gradient of the experts' weighted sum (dout itself without a latent
// MoE, g.dLatentOut = dout·fc2 (+ its adapter's) with one), adding
// fc2's adapter's gradients; it also returns the experts' input rows x
// and where the gradient of x goes (dh, or g.dLatentIn).
func (m *Model) latentBackwardOut(l int, s *moeActs, g *moeGrads, dh, dout, h kernels.Buffer, n int) (dsum, x, dx kernels.Buffer) {
	if s.latentIn == nil {
		return dout, h, dh
	}
	w := m.W.Layers[l].MoE
	m.projectBackward(l, ProjLatentOut, g.dLatentOut, dout, s.latentOut, w.LatentOut, n, s.xa[ProjLatentOut], g.dyB[ProjLatentOut], false)
	return g.dLatentOut, s.latentIn, g.dLatentIn
}

// latentBackwardIn writes dh = g.dLatentIn·fc1 (+ its adapter's), the
// gradient of the layer's input through the experts, adding fc1's
// adapter's gradients; nothing without a latent MoE (the experts'
// gradient went into dh directly).
func (m *Model) latentBackwardIn(l int, s *moeActs, g *moeGrads, dh, h kernels.Buffer, n int) {
	if s.latentIn == nil {
		return
	}
	m.projectBackward(l, ProjLatentIn, dh, g.dLatentIn, h, m.W.Layers[l].MoE.LatentIn, n, s.xa[ProjLatentIn], g.dyB[ProjLatentIn], false)
}
