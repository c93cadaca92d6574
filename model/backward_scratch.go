package model

import "github.com/grpo-dev/grpo/kernels"

// layerGrads is one layer's backward scratch: its MLP's (dense or
// sparse) and its token mixer's (attention or DeltaNet) gradients, listed
// by layerGradSpecs and allocated together when the layer's backward
// starts, so that BackwardBytes is what it allocates. Nothing of it is
// freed before the layer's backward ends, so allocating it up front
// rather than op by op leaves the peak as it was.
type layerGrads struct {
	mlp    mlpGrads
	moe    moeGrads
	attn   attentionGrads
	linear deltaNetGrads
}

// layerGradSpecs lists layer l's backward scratch for n tokens under the
// adapter ad. cacheRows is the rows of the layer's KV cache (attention's
// key and value gradients are cache-shaped), groups the shared prompts
// whose DeltaNet states the trace holds (0: none); needInput is whether
// the layer's input gets a gradient (not the first layer's: its input is
// the frozen embedding).
func (c *Config) layerGradSpecs(g *layerGrads, l, n, cacheRows, groups int, ad *AdapterShape, needInput bool) bufSpecs {
	var b bufSpecs
	if c.IsSparse(l) {
		b = c.moeGradSpecs(&g.moe, l, n, ad)
	} else {
		b = c.mlpGradSpecs(&g.mlp, l, n, ad)
	}
	if c.Mixer(l) == MixGatedDeltaNet {
		return append(b, c.deltaNetGradSpecs(&g.linear, l, n, groups, ad, needInput)...)
	}
	return append(b, c.attentionGradSpecs(&g.attn, l, n, cacheRows, ad, needInput)...)
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
