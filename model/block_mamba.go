package model

import "github.com/grpo-dev/grpo/kernels"

// mamba2 is the Mamba-2 mixer of Nemotron-H's M layers (transformers'
// NemotronHMamba2Mixer, vLLM's MambaMixer2): in_proj from the normed
// input to z | xBC | dt; the depthwise causal conv with its bias and
// SiLU over xBC (x | B | C, B and C in n_groups groups); the SSD scan
// with dt = softplus(dt + dt_bias), A = −exp(A_log) and the D skip
// (kernels.SSMOps); the gated norm, silu(z) before the RMS in n_groups
// groups; out_proj. Its per-sequence cache is the conv's last inputs and
// the heads' states, as a DeltaNet layer's (cache_linear.go): a GRPO
// group's prompt state is computed once and copied the same way.
type mamba2 struct{}

func (mamba2) cacheKind() TokenMixer { return MixMamba2 }

func (mamba2) loraTargets() []Proj { return mambaProjs[:] }

func (mamba2) params(c *Config) int64 { return c.mambaParams() }

func (mamba2) gemmWeight(w *Layer) kernels.Buffer { return w.Mamba.InProj }

func (mamba2) projWeight(w *Layer, p Proj) kernels.Buffer {
	switch p {
	case ProjMambaIn:
		return w.Mamba.InProj
	case ProjOut:
		return w.Mamba.Out
	}
	return nil
}

func (mamba2) weightSpecs(c *Config, s []tensorSpec, w *Layer, prefix string) (out, tail []tensorSpec) {
	mw := &MambaWeights{}
	w.Mamba = mw
	h, d, conv, nh := c.HiddenSize, c.MambaDim(), c.MambaConvDim(), c.MambaNumHeads
	p := prefix + "mixer."
	return append(s,
		tensorSpec{name: p + "in_proj.weight", shape: []int{c.MambaInProjDim(), h}, dst: &mw.InProj},
		tensorSpec{name: p + "conv1d.weight", shape: []int{conv, 1, c.ConvKernel}, dst: &mw.Conv},
		tensorSpec{name: p + "conv1d.bias", shape: []int{conv}, dst: &mw.ConvBias},
		tensorSpec{name: p + "dt_bias", shape: []int{nh}, dst: &mw.DTBias, f32: true},
		tensorSpec{name: p + "A_log", shape: []int{nh}, dst: &mw.ALog, f32: true},
		tensorSpec{name: p + "D", shape: []int{nh}, dst: &mw.D, f32: true},
		tensorSpec{name: p + "norm.weight", shape: []int{d}, dst: &mw.Norm},
		tensorSpec{name: p + "out_proj.weight", shape: []int{h, d}, dst: &mw.Out}), nil
}

func (mamba2) weightBuffers(w *Layer) []*kernels.Buffer {
	mw := w.Mamba
	return []*kernels.Buffer{&mw.InProj, &mw.Conv, &mw.ConvBias, &mw.DTBias, &mw.ALog, &mw.D, &mw.Norm, &mw.Out}
}

func (mamba2) resliceWeights(*Config, *Layer) {}

// inferenceSpecs: the one set every Mamba layer shares, its x·Aᵀ at the
// largest rank (the static decode step has no arena for scratch).
func (mamba2) inferenceSpecs(c *Config, s *layerActs, n int, ad *AdapterShape) bufSpecs {
	s.mamba = &mambaActs{}
	return c.mambaActSpecs(s.mamba, -1, n, ad, false)
}

// finishInference: the gated norm writes in place.
func (mamba2) finishInference(s *layerActs) { s.mamba.normed = s.mamba.y }

func (mamba2) loraSpecs(*Config, *layerActs, int, int, *AdapterShape) bufSpecs { return nil }

func (mamba2) trainingSpecs(c *Config, s *layerActs, l, n int, ad *AdapterShape, _ Recompute, _ kernels.DType) bufSpecs {
	s.mamba = &mambaActs{}
	return c.mambaActSpecs(s.mamba, l, n, ad, true)
}

func (mamba2) droppedSpecs(*Config, *layerActs, int, Recompute) bufSpecs { return nil }

func (mamba2) dropKept(*layerActs, Recompute) {}

func (mamba2) gradSpecs(c *Config, g *layerGrads, l, n, _, groups int, ad *AdapterShape, needInput bool) bufSpecs {
	return c.mambaGradSpecs(&g.mamba, l, n, groups, ad, needInput)
}

func (mamba2) forward(m *Model, a *arena, l int, cache *KVCache, idx batchIndex, n int, s *layerActs) {
	m.mambaForward(a, l, cache, idx, n, s.mamba, s.h1, s.h1b, s.o)
}

func (mamba2) recompute(*Model, int, *KVCache, batchIndex, int, *layerActs, Recompute) {}

func (mamba2) backward(tr *Trace, l int, s *layerActs, g *layerGrads, dx kernels.Buffer, _ bool) kernels.Buffer {
	tr.mambaBackward(l, s, &g.mamba, dx)
	return g.mamba.dh1
}

// bf16Acts: in_proj's output and its z and xBC parts, the conv's, the
// scan's and the gated norm's outputs, and the backward's gradients of
// those and of the block's input. What stays f32: dt before its softplus
// and its gradient (a few values per head, an exponent's argument), the
// norm's statistics and the recurrent states.
func (mamba2) bf16Acts(_ *Config, s *layerActs, g *layerGrads) (bf16Acts, bool) {
	a := s.mamba
	if a == nil {
		a = &mambaActs{} // a set not listed yet: only the decision is wanted
	}
	d := &g.mamba
	return bf16Acts{bufs: []*kernels.Buffer{&a.proj, &a.z, &a.y, &a.xBC, &a.conv, &a.normed,
		&d.dNormed, &d.dY, &d.dZ, &d.dConv, &d.dxBC, &d.dProj, &d.dh1}}, true
}

// MambaWeights are a Mamba-2 mixer's frozen weights (under mixer.):
// in_proj (z | xBC | dt rows × hidden), conv1d's weight (conv channels ×
// kernel) and bias, dt_bias, A_log and D (heads, f32), the gated norm's
// weight and out_proj.
type MambaWeights struct {
	InProj, Conv, ConvBias kernels.Buffer
	DTBias, ALog, D        kernels.Buffer
	Norm, Out              kernels.Buffer
}

// mambaProjs are a Mamba-2 mixer's projections, in the order of
// mambaActs.xa.
var mambaProjs = [...]Proj{ProjMambaIn, ProjOut}

// mambaActs are a Mamba-2 layer's activations between its norm and
// out_proj. For inference one set serves every layer and y is normed in
// place; a training layer keeps its own, with the norm's output and
// statistics apart, and each adapted projection's x·Aᵀ.
type mambaActs struct {
	proj      kernels.Buffer // n × in_proj: z | xBC | dt
	z, y      kernels.Buffer // n × heads·headDim: the gate, the scan's output
	xBC, conv kernels.Buffer // n × conv channels: the conv's input and output
	dt        kernels.Buffer // n × heads: dt before its softplus
	normed    kernels.Buffer // n × heads·headDim: the gated norm's output (y itself for inference)
	rstd      kernels.Buffer // n × groups: the gated norm's 1/rms (training)
	xa        [len(mambaProjs)]kernels.Buffer
}

func (c *Config) mambaActSpecs(s *mambaActs, l, n int, ad *AdapterShape, training bool) bufSpecs {
	d, conv, nh := c.MambaDim(), c.MambaConvDim(), c.MambaNumHeads
	var b bufSpecs
	b.f32(&s.proj, n*c.MambaInProjDim())
	b.f32(&s.z, n*d)
	b.f32(&s.y, n*d)
	b.f32(&s.xBC, n*conv)
	b.f32(&s.conv, n*conv)
	b.f32(&s.dt, n*nh)
	for i, p := range mambaProjs {
		b.f32(&s.xa[i], n*ad.rank(l, p))
	}
	if training {
		b.f32(&s.normed, n*d)
		b.f32(&s.rstd, n*c.MambaGroups)
	}
	return b
}

// mambaForward is layer l's Mamba-2 mixer: from the normed input h1 (n ×
// hidden; h1b its bf16 cast or nil) it writes out (n × hidden), reading
// and updating the batch's sequences' states in cache as idx's runs say
// (linearCalls, as deltaNetForward).
func (m *Model) mambaForward(a *arena, l int, cache *KVCache, idx batchIndex, n int, s *mambaActs, h1, h1b, out kernels.Buffer) {
	c, w, be := m.Config, m.W.Layers[l].Mamba, m.Backend
	d, conv, nh, width := c.MambaDim(), c.MambaConvDim(), c.MambaNumHeads, c.MambaInProjDim()
	m.project(a, l, ProjMambaIn, s.proj, h1, h1b, w.InProj, nil, n, s.xa[0])
	be.CopyColumns(s.z, s.proj, n, d, d, 0, width, 0)
	be.CopyColumns(s.xBC, s.proj, n, conv, conv, 0, width, d)
	be.CopyColumns(s.dt, s.proj, n, nh, nh, 0, width, d+conv)
	convState, state := cache.linear.layer(l)
	calls := idx.linearCalls(n)
	for _, lc := range calls {
		be.CausalConv1D(lc.rows(s.conv, conv), lc.rows(s.xBC, conv), w.Conv, w.ConvBias, convState, lc.runs, lc.nRuns, lc.n, conv, c.ConvKernel)
	}
	for _, lc := range calls {
		be.SSDScan(lc.rows(s.y, d), lc.rows(s.conv, conv), lc.rows(s.dt, nh), w.ALog, w.DTBias, w.D, state, lc.runs, lc.nRuns, lc.n,
			nh, c.MambaHeadDim, c.MambaGroups, c.SSMStateSize)
	}
	be.GroupedGatedRMSNorm(s.normed, s.rstd, s.y, s.z, w.Norm, n, d, c.MambaGroups, float32(c.RMSNormEps))
	m.project(a, l, ProjOut, out, s.normed, nil, w.Out, nil, n, s.xa[1])
}

// mambaGrads is a Mamba-2 mixer's backward scratch: the gradients of the
// norm's output and inputs (y, z), of the scan's inputs (the conv's
// output, dt), of the conv's input, of in_proj's output (z | xBC | dt
// joined), of the shared prompts' states (when the trace holds any), of
// the block's input h1 (when needed), and dy·B of each adapted
// projection.
type mambaGrads struct {
	dNormed, dY, dZ    kernels.Buffer
	dConv, dxBC, dDt   kernels.Buffer
	dProj              kernels.Buffer
	dConvState, dState kernels.Buffer
	dh1                kernels.Buffer
	dxa                [len(mambaProjs)]kernels.Buffer
}

func (c *Config) mambaGradSpecs(g *mambaGrads, l, n, groups int, ad *AdapterShape, needInput bool) bufSpecs {
	d, conv, nh := c.MambaDim(), c.MambaConvDim(), c.MambaNumHeads
	var b bufSpecs
	for _, dst := range []*kernels.Buffer{&g.dNormed, &g.dY, &g.dZ} {
		b.f32(dst, n*d)
	}
	b.f32(&g.dConv, n*conv)
	b.f32(&g.dxBC, n*conv)
	b.f32(&g.dDt, n*nh)
	b.f32(&g.dProj, n*c.MambaInProjDim())
	b.f32(&g.dConvState, groups*c.ConvStateWidth())
	b.f32(&g.dState, groups*c.RecurrentStateWidth())
	if needInput {
		b.f32(&g.dh1, n*c.HiddenSize)
	}
	for i, p := range mambaProjs {
		b.f32(&g.dxa[i], n*ad.Ranks[l][p])
	}
	return b
}

// mambaBackward is the Mamba-2 block's backward: dx, the gradient of its
// output, becomes g.dh1 (when needed), and the mixer's adapters get
// their gradients. The state gradients flow as deltaNetBackward's.
func (tr *Trace) mambaBackward(l int, s *layerActs, g *mambaGrads, dx kernels.Buffer) {
	m, c := tr.m, tr.m.Config
	w, a, be := m.W.Layers[l].Mamba, s.mamba, m.Backend
	n := tr.n
	d, conv, nh, width := c.MambaDim(), c.MambaConvDim(), c.MambaNumHeads, c.MambaInProjDim()
	m.projectBackward(l, ProjOut, g.dNormed, dx, a.normed, w.Out, n, a.xa[1], g.dxa[1], false)
	be.GroupedGatedRMSNormBackward(g.dY, g.dZ, g.dNormed, a.y, a.z, w.Norm, a.rstd, n, d, c.MambaGroups)
	convState, state := tr.cache.linear.layer(l)
	calls := tr.idx.linearCalls(n)
	for i := len(calls) - 1; i >= 0; i-- {
		lc := calls[i]
		be.SSDScanBackward(lc.rows(g.dConv, conv), lc.rows(g.dDt, nh), g.dState, lc.rows(g.dY, d), lc.rows(a.conv, conv), lc.rows(a.dt, nh),
			w.ALog, w.DTBias, w.D, state, lc.runs, lc.nRuns, lc.n, nh, c.MambaHeadDim, c.MambaGroups, c.SSMStateSize)
	}
	for i := len(calls) - 1; i >= 0; i-- {
		lc := calls[i]
		be.CausalConv1DBackward(lc.rows(g.dxBC, conv), g.dConvState, lc.rows(g.dConv, conv), lc.rows(a.xBC, conv), w.Conv, w.ConvBias, convState,
			lc.runs, lc.nRuns, lc.n, conv, c.ConvKernel)
	}
	be.CopyColumns(g.dProj, g.dZ, n, d, width, 0, d, 0)
	be.CopyColumns(g.dProj, g.dxBC, n, conv, width, d, conv, 0)
	be.CopyColumns(g.dProj, g.dDt, n, nh, width, d+conv, nh, 0)
	m.projectBackward(l, ProjMambaIn, g.dh1, g.dProj, keptInput(s.h1, s.h1b), w.InProj, n, a.xa[0], g.dxa[0], false)
}
