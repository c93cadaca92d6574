package model

import "github.com/grpo-dev/grpo/kernels"

// deltaNet is gated DeltaNet linear attention (HF Qwen3_5GatedDeltaNet,
// Qwen3.5's "linear_attention" layers): in_proj_qkv/z/b/a from the normed
// input, a causal depthwise conv over q/k/v, the decay and write-strength
// gates, the gated delta rule over a fixed-size recurrent state per
// sequence (kernels.LinearOps), a norm gated by z, and out_proj. Its
// per-sequence cache is that state (and the conv's last inputs), not a
// KV cache: memory that does not grow with the sequence.
type deltaNet struct{}

func (deltaNet) cacheKind() TokenMixer { return MixGatedDeltaNet }

func (deltaNet) loraTargets() []Proj { return deltaNetProjs[:] }

func (deltaNet) params(c *Config) int64 { return c.linearLayerParams() }

func (deltaNet) gemmWeight(w *Layer) kernels.Buffer { return w.Linear.InProj }

func (deltaNet) projWeight(w *Layer, p Proj) kernels.Buffer {
	if p >= ProjInQKV && p <= ProjOut {
		l := w.Linear
		return [...]kernels.Buffer{l.QKV, l.Z, l.B, l.A, l.Out}[p-ProjInQKV]
	}
	return nil
}

func (deltaNet) weightSpecs(c *Config, s []tensorSpec, w *Layer, p string) (out, tail []tensorSpec) {
	return c.deltaNetSpecs(s, w, p), nil
}

func (deltaNet) weightBuffers(w *Layer) []*kernels.Buffer { return w.Linear.buffers() }

func (deltaNet) resliceWeights(c *Config, w *Layer) { w.Linear.reslice(c.HiddenSize) }

// inferenceSpecs: the one set every DeltaNet layer shares, its x·Aᵀ at
// the largest rank (the static decode step has no arena for scratch).
func (deltaNet) inferenceSpecs(c *Config, s *layerActs, n int, ad *AdapterShape) bufSpecs {
	s.linear = &deltaNetActs{}
	return c.deltaNetActSpecs(s.linear, -1, n, ad, false)
}

// finishInference: the gated norm writes in place.
func (deltaNet) finishInference(s *layerActs) { s.linear.normed = s.linear.core }

// loraSpecs: none beside the inference set's.
func (deltaNet) loraSpecs(*Config, *layerActs, int, int, *AdapterShape) bufSpecs { return nil }

// trainingSpecs: the layer's own set, gated norm output and statistics
// included; no policy drops any of it.
func (deltaNet) trainingSpecs(c *Config, s *layerActs, l, n int, ad *AdapterShape, _ Recompute, _ kernels.DType) bufSpecs {
	s.linear = &deltaNetActs{}
	return c.deltaNetActSpecs(s.linear, l, n, ad, true)
}

func (deltaNet) droppedSpecs(*Config, *layerActs, int, Recompute) bufSpecs { return nil }

func (deltaNet) dropKept(*layerActs, Recompute) {}

func (deltaNet) gradSpecs(c *Config, g *layerGrads, l, n, _, groups int, ad *AdapterShape, needInput bool) bufSpecs {
	return c.deltaNetGradSpecs(&g.linear, l, n, groups, ad, needInput)
}

func (deltaNet) forward(m *Model, a *arena, l int, cache *KVCache, idx batchIndex, n int, s *layerActs) {
	m.deltaNetForward(a, l, cache, idx, n, s.linear, s.h1, s.h1b, s.o)
}

func (deltaNet) recompute(*Model, int, *KVCache, batchIndex, int, *layerActs, Recompute) {}

func (deltaNet) backward(tr *Trace, l int, s *layerActs, g *layerGrads, dx kernels.Buffer, _ bool) kernels.Buffer {
	tr.deltaNetBackward(l, s, &g.linear, dx)
	return g.linear.dh1
}

// bf16Acts: in_proj_qkv's and in_proj_z's outputs, the conv's, the delta
// rule's and the gated norm's, and the backward's gradients of those.
// What stays f32: the gates (in_proj_a's and in_proj_b's outputs, the
// decay and write strength) and their gradients, whose exponentials and
// cumulative products bf16 would spoil for a few bytes per head; the
// norm's statistics; the recurrent states; and dh1, which the four
// input projections' backwards accumulate.
func (deltaNet) bf16Acts(_ *Config, s *layerActs, g *layerGrads) (bf16Acts, bool) {
	d := s.linear
	if d == nil {
		d = &deltaNetActs{} // a set not listed yet: only the decision is wanted
	}
	dg := &g.linear
	return bf16Acts{bufs: []*kernels.Buffer{&d.mixed, &d.conv, &d.z, &d.core, &d.normed,
		&dg.dNormed, &dg.dCore, &dg.dZ, &dg.dConv, &dg.dMixed}}, true
}

// DeltaNetWeights are a gated DeltaNet token mixer's frozen weights (HF
// Qwen3_5GatedDeltaNet, under linear_attn.). InProj is [in_proj_qkv;
// in_proj_z; in_proj_b; in_proj_a] ((conv + value + 2·heads) × hidden),
// one buffer of which QKV, Z, B and A are views, as Layer.QKV is for
// attention.
type DeltaNetWeights struct {
	InProj     kernels.Buffer
	QKV, Z     kernels.Buffer
	B, A       kernels.Buffer
	Conv       kernels.Buffer // conv1d.weight: conv channels × kernel
	ALog       kernels.Buffer // A_log: value heads (f32 in real checkpoints)
	DTBias     kernels.Buffer // dt_bias: value heads
	Norm       kernels.Buffer // the gated norm's weight: value head dim
	Out        kernels.Buffer // out_proj: hidden × value
	inProjRows [4]int         // rows of qkv, z, b, a in InProj
}

// deltaNetSpecs appends a DeltaNet layer's tensors under prefix
// ("model.layers.N.") to s.
func (c *Config) deltaNetSpecs(s []tensorSpec, l *Layer, prefix string) []tensorSpec {
	h, conv, vd, hv := c.HiddenSize, c.LinearConvDim(), c.LinearValueDim(), c.LinearNumValueHeads
	w := &DeltaNetWeights{inProjRows: [4]int{conv, vd, hv, hv}}
	l.Linear = w
	in := &fusedSpec{dst: &w.InProj}
	p := prefix + "linear_attn."
	for i, m := range []struct {
		name string
		dst  *kernels.Buffer
	}{{"in_proj_qkv", &w.QKV}, {"in_proj_z", &w.Z}, {"in_proj_b", &w.B}, {"in_proj_a", &w.A}} {
		shape := []int{w.inProjRows[i], h}
		s = append(s, tensorSpec{name: p + m.name + ".weight", shape: shape, dst: m.dst, fused: in, off: in.size})
		in.size += numel(shape)
		in.members = append(in.members, len(s)-1)
	}
	return append(s,
		tensorSpec{name: p + "conv1d.weight", shape: []int{conv, 1, c.LinearConvKernel}, dst: &w.Conv},
		// The gates' parameters in f32 whatever the checkpoint's dtype:
		// real ones ship A_log in f32 and dt_bias in bf16, and DeltaGates
		// takes one dtype for both (a bf16 model on cuda failed there).
		tensorSpec{name: p + "A_log", shape: []int{hv}, dst: &w.ALog, f32: true},
		tensorSpec{name: p + "dt_bias", shape: []int{hv}, dst: &w.DTBias, f32: true},
		tensorSpec{name: p + "norm.weight", shape: []int{c.LinearValueHeadDim}, dst: &w.Norm},
		tensorSpec{name: p + "out_proj.weight", shape: []int{h, vd}, dst: &w.Out})
}

// buffers are the DeltaNet weights' own allocations (not the views).
func (w *DeltaNetWeights) buffers() []*kernels.Buffer {
	return []*kernels.Buffer{&w.InProj, &w.Conv, &w.ALog, &w.DTBias, &w.Norm, &w.Out}
}

// reslice sets QKV, Z, B and A again after InProj was replaced.
func (w *DeltaNetWeights) reslice(h int) {
	views := []*kernels.Buffer{&w.QKV, &w.Z, &w.B, &w.A}
	off := 0
	for i, v := range views {
		*v = w.InProj.Slice(off, w.inProjRows[i]*h)
		off += w.inProjRows[i] * h
	}
}

// deltaNetProjs are a DeltaNet token mixer's projections, in the order
// of deltaNetActs.xa.
var deltaNetProjs = [...]Proj{ProjInQKV, ProjInZ, ProjInB, ProjInA, ProjOut}

// deltaNetActs are a DeltaNet layer's activations between its input norm
// and out_proj (Config.DeltaNetActWidth per token). For inference one set
// serves every layer and core is normed in place; a training layer keeps
// its own set, with normed, rstd and each adapted projection's x·Aᵀ for
// the backward.
type deltaNetActs struct {
	mixed, conv kernels.Buffer // n × conv channels: in_proj_qkv's output, the conv's
	z, core     kernels.Buffer // n × value: in_proj_z's output, the delta rule's
	a, b        kernels.Buffer // n × value heads: in_proj_a's and in_proj_b's outputs
	g, beta     kernels.Buffer // n × value heads: decay and write strength
	normed      kernels.Buffer // n × value: the gated norm's output (core itself for inference)
	rstd        kernels.Buffer // n × value heads: the gated norm's 1/rms (training)
	xa          [len(deltaNetProjs)]kernels.Buffer
}

// deltaNetActSpecs lists a DeltaNet layer's activations for n tokens
// (Config.DeltaNetActWidth per token) and the x·Aᵀ of each adapted
// projection: layer l's, or with l < 0 one per projection of the largest
// rank any layer has (the static decode step has no arena for scratch).
// A training set (training) keeps the gated norm's output and statistics
// apart from its input, for the backward.
func (c *Config) deltaNetActSpecs(s *deltaNetActs, l, n int, ad *AdapterShape, training bool) bufSpecs {
	conv, vd, hv := c.LinearConvDim(), c.LinearValueDim(), c.LinearNumValueHeads
	var b bufSpecs
	b.f32(&s.mixed, n*conv)
	b.f32(&s.conv, n*conv)
	b.f32(&s.z, n*vd)
	b.f32(&s.core, n*vd)
	for _, dst := range []*kernels.Buffer{&s.a, &s.b, &s.g, &s.beta} {
		b.f32(dst, n*hv)
	}
	for i, p := range deltaNetProjs {
		b.f32(&s.xa[i], n*ad.rank(l, p))
	}
	if training {
		b.f32(&s.normed, n*vd)
		b.f32(&s.rstd, n*hv)
	}
	return b
}

// deltaNetForward is layer l's token mixer for a DeltaNet layer: from the
// normed input h1 (n × hidden; h1b its bf16 cast or nil) it writes out
// (n × hidden, out_proj's output), reading and updating the batch's
// sequences' states in cache as idx's runs say (linearCalls: a training
// batch whose groups share prompts runs the prompts first, leaving their
// states for the continuations).
func (m *Model) deltaNetForward(a *arena, l int, cache *KVCache, idx batchIndex, n int, s *deltaNetActs, h1, h1b, out kernels.Buffer) {
	c, w := m.Config, m.W.Layers[l].Linear
	conv, hv, vd := c.LinearConvDim(), c.LinearNumValueHeads, c.LinearValueDim()
	lin := m.Backend
	m.project(a, l, ProjInQKV, s.mixed, h1, h1b, w.QKV, nil, n, s.xa[0])
	m.project(a, l, ProjInZ, s.z, h1, h1b, w.Z, nil, n, s.xa[1])
	m.project(a, l, ProjInB, s.b, h1, h1b, w.B, nil, n, s.xa[2])
	m.project(a, l, ProjInA, s.a, h1, h1b, w.A, nil, n, s.xa[3])
	convState, state := cache.linear.layer(l)
	calls := idx.linearCalls(n)
	for _, lc := range calls {
		lin.CausalConv1D(lc.rows(s.conv, conv), lc.rows(s.mixed, conv), w.Conv, nil, convState, lc.runs, lc.nRuns, lc.n, conv, c.LinearConvKernel)
	}
	lin.DeltaGates(s.g, s.beta, s.a, s.b, w.ALog, w.DTBias, n, hv)
	for _, lc := range calls {
		lin.GatedDeltaRule(lc.rows(s.core, vd), lc.rows(s.conv, conv), lc.rows(s.g, hv), lc.rows(s.beta, hv), state, lc.runs, lc.nRuns, lc.n,
			c.LinearNumKeyHeads, hv, c.LinearKeyHeadDim, c.LinearValueHeadDim)
	}
	lin.GatedRMSNorm(s.normed, s.rstd, s.core, s.z, w.Norm, n*hv, c.LinearValueHeadDim, float32(c.RMSNormEps))
	m.project(a, l, ProjOut, out, s.normed, nil, w.Out, nil, n, s.xa[4])
}

// deltaNetGrads is a DeltaNet token mixer's backward scratch: the
// gradients of the gated norm's output and inputs (core, z), of the
// conv's output and input (mixed), of the gates (g, beta) and of
// in_proj_a's and in_proj_b's outputs, of the shared prompts' states
// (when the trace holds any), of the block's input h1 (when needed), and
// dy·B of each adapted projection.
type deltaNetGrads struct {
	dNormed, dCore, dZ kernels.Buffer
	dConv, dMixed      kernels.Buffer
	dg, dbeta, da, db  kernels.Buffer
	dConvState, dState kernels.Buffer
	dh1                kernels.Buffer
	dxa                [len(deltaNetProjs)]kernels.Buffer
}

// deltaNetGradSpecs lists layer l's DeltaNet backward scratch for n
// tokens, with the states of groups shared prompts (0: none; zero when
// allocated: nothing downstream reads a prompt's final state but its
// continuations, which add their initial states' gradient there before
// the prompts' call reads it).
func (c *Config) deltaNetGradSpecs(g *deltaNetGrads, l, n, groups int, ad *AdapterShape, needInput bool) bufSpecs {
	conv, vd, hv := c.LinearConvDim(), c.LinearValueDim(), c.LinearNumValueHeads
	var b bufSpecs
	for _, dst := range []*kernels.Buffer{&g.dNormed, &g.dCore, &g.dZ} {
		b.f32(dst, n*vd)
	}
	b.f32(&g.dConv, n*conv)
	b.f32(&g.dMixed, n*conv)
	for _, dst := range []*kernels.Buffer{&g.dg, &g.dbeta, &g.da, &g.db} {
		b.f32(dst, n*hv)
	}
	b.f32(&g.dConvState, groups*c.ConvStateWidth())
	b.f32(&g.dState, groups*c.RecurrentStateWidth())
	if needInput {
		b.f32(&g.dh1, n*c.HiddenSize)
	}
	for i, p := range deltaNetProjs {
		b.f32(&g.dxa[i], n*ad.Ranks[l][p])
	}
	return b
}

// deltaNetBackward is the DeltaNet block's backward: dx, the gradient of
// its output, becomes g.dh1, the gradient of its input h1 (when
// needInput), and the mixer's adapters get their gradients.
// The runs of an unshared batch start fresh and keep nothing (training's
// sequences begin at position 0), so no state gradient flows; with shared
// prompts the calls run in reverse, and the state gradients carry the
// continuations' gradient back into their prompts (trainshare_linear.go).
func (tr *Trace) deltaNetBackward(l int, s *layerActs, g *deltaNetGrads, dx kernels.Buffer) {
	m, c := tr.m, tr.m.Config
	w, d := m.W.Layers[l].Linear, s.linear
	n := tr.n
	conv, vd, hv := c.LinearConvDim(), c.LinearValueDim(), c.LinearNumValueHeads
	lin := m.Backend
	m.projectBackward(l, ProjOut, g.dNormed, dx, d.normed, w.Out, n, d.xa[4], g.dxa[4], false)
	lin.GatedRMSNormBackward(g.dCore, g.dZ, g.dNormed, d.core, d.z, w.Norm, d.rstd, n*hv, c.LinearValueHeadDim)
	// nil without shared prompts: an unshared trace keeps no states (and
	// its dConvState and dState are nil too).
	convState, state := tr.cache.linear.layer(l)
	calls := tr.idx.linearCalls(n)
	for i := len(calls) - 1; i >= 0; i-- {
		lc := calls[i]
		lin.GatedDeltaRuleBackward(lc.rows(g.dConv, conv), lc.rows(g.dg, hv), lc.rows(g.dbeta, hv), g.dState, lc.rows(g.dCore, vd),
			lc.rows(d.conv, conv), lc.rows(d.g, hv), lc.rows(d.beta, hv), state, lc.runs, lc.nRuns, lc.n,
			c.LinearNumKeyHeads, hv, c.LinearKeyHeadDim, c.LinearValueHeadDim)
	}
	lin.DeltaGatesBackward(g.da, g.db, g.dg, g.dbeta, d.a, d.b, w.ALog, w.DTBias, n, hv)
	for i := len(calls) - 1; i >= 0; i-- {
		lc := calls[i]
		lin.CausalConv1DBackward(lc.rows(g.dMixed, conv), g.dConvState, lc.rows(g.dConv, conv), lc.rows(d.mixed, conv), w.Conv, nil, convState,
			lc.runs, lc.nRuns, lc.n, conv, c.LinearConvKernel)
	}
	for i, in := range []struct {
		dy, w kernels.Buffer
	}{{g.dMixed, w.QKV}, {g.dZ, w.Z}, {g.db, w.B}, {g.da, w.A}} {
		m.projectBackward(l, deltaNetProjs[i], g.dh1, in.dy, keptInput(s.h1, s.h1b), in.w, n, d.xa[i], g.dxa[i], i > 0)
	}
}
