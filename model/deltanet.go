package model

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

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
		tensorSpec{name: p + "A_log", shape: []int{hv}, dst: &w.ALog},
		tensorSpec{name: p + "dt_bias", shape: []int{hv}, dst: &w.DTBias},
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

// deltaNetActs are a DeltaNet layer's activations between its input norm
// and out_proj (Config.DeltaNetActWidth per token).
type deltaNetActs struct {
	mixed, conv kernels.Buffer // n × conv channels: in_proj_qkv's output, the conv's
	z, core     kernels.Buffer // n × value: in_proj_z's output, the delta rule's (normed in place)
	a, b        kernels.Buffer // n × value heads: in_proj_a's and in_proj_b's outputs
	g, beta     kernels.Buffer // n × value heads: decay and write strength
}

func (m *Model) newDeltaNetActs(a *arena, n int) *deltaNetActs {
	c := m.Config
	f := func(k int) kernels.Buffer { return a.alloc(kernels.F32, k) }
	conv, vd, hv := c.LinearConvDim(), c.LinearValueDim(), c.LinearNumValueHeads
	return &deltaNetActs{mixed: f(n * conv), conv: f(n * conv), z: f(n * vd), core: f(n * vd),
		a: f(n * hv), b: f(n * hv), g: f(n * hv), beta: f(n * hv)}
}

// linearOps is the backend's gated DeltaNet ops, or an error naming the
// backend that lacks them.
func (m *Model) linearOps() (kernels.LinearOps, error) {
	if lin, ok := m.Backend.(kernels.LinearOps); ok {
		return lin, nil
	}
	return nil, fmt.Errorf("backend %s has no linear-attention (gated DeltaNet) ops; %s needs them", m.Backend.Name(), m.Config.Arch().Name)
}

// deltaNetForward is layer l's token mixer for a DeltaNet layer: from the
// normed input h1 (n × hidden) it writes out (n × hidden, out_proj's
// output), reading and updating the batch's sequences' states in cache.
func (m *Model) deltaNetForward(l int, cache *KVCache, idx batchIndex, n int, s *deltaNetActs, h1, out kernels.Buffer) {
	be, c, w := m.Backend, m.Config, m.W.Layers[l].Linear
	h, conv, vd, hv := c.HiddenSize, c.LinearConvDim(), c.LinearValueDim(), c.LinearNumValueHeads
	lin, _ := m.linearOps() // checked by Forward
	be.MatMul(s.mixed, h1, w.QKV, n, conv, h, false, true, 1, 0)
	be.MatMul(s.z, h1, w.Z, n, vd, h, false, true, 1, 0)
	be.MatMul(s.b, h1, w.B, n, hv, h, false, true, 1, 0)
	be.MatMul(s.a, h1, w.A, n, hv, h, false, true, 1, 0)
	st := cache.linear
	lin.CausalConv1D(s.conv, s.mixed, w.Conv, st.conv[l], idx.runs, idx.nRuns, n, conv, c.LinearConvKernel)
	lin.DeltaGates(s.g, s.beta, s.a, s.b, w.ALog, w.DTBias, n, hv)
	lin.GatedDeltaRule(s.core, s.conv, s.g, s.beta, st.state[l], idx.runs, idx.nRuns, n,
		c.LinearNumKeyHeads, hv, c.LinearKeyHeadDim, c.LinearValueHeadDim)
	lin.GatedRMSNorm(s.core, nil, s.core, s.z, w.Norm, n*hv, c.LinearValueHeadDim, float32(c.RMSNormEps))
	be.MatMul(out, s.core, w.Out, n, h, vd, false, true, 1, 0)
}
