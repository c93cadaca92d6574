package model

import "github.com/grpo-dev/grpo/kernels"

// layerGrads is one layer's backward scratch: its channel mixer's (dense
// or sparse MLP) and its token mixer's (attention or DeltaNet) gradients,
// one field per block kind (each block's gradSpecs fills its own), listed
// by layerGradSpecs and allocated together when the layer's backward
// starts, so that BackwardBytes is what it allocates. Nothing of it is
// freed before the layer's backward ends, so allocating it up front
// rather than op by op leaves the peak as it was.
type layerGrads struct {
	mlp    mlpGrads
	moe    moeGrads
	attn   attentionGrads
	linear deltaNetGrads
	mamba  mambaGrads
}

// layerGradSpecs lists layer l's backward scratch for n tokens under the
// adapter ad. cacheRows is the rows of the layer's KV cache (attention's
// key and value gradients are cache-shaped), groups the shared prompts
// whose DeltaNet states the trace holds (0: none); needInput is whether
// the layer's input gets a gradient (not the first layer's: its input is
// the frozen embedding); attn is the trace's attention dtype (a bf16
// layer's gradients between ops are bf16, trace_acts.go).
func (c *Config) layerGradSpecs(g *layerGrads, l, n, cacheRows, groups int, ad *AdapterShape, needInput bool, attn kernels.DType) bufSpecs {
	d := c.decoderLayer(l)
	b := d.channel.gradSpecs(c, g, l, n, ad)
	b = append(b, d.mixer.gradSpecs(c, g, l, n, cacheRows, groups, ad, needInput)...)
	if t, ok := c.bf16Layer(l, attn, &layerActs{}, g); ok {
		return b.inBF16(t)
	}
	return b
}
