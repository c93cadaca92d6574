package model

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// Layer holds one decoder layer's frozen weights. Linear weights are
// [out, in] as in HF; optional tensors are nil when the architecture has
// none.
type Layer struct {
	InputNorm, PostAttnNorm kernels.Buffer
	Q, K, V, O              kernels.Buffer
	QBias, KBias, VBias     kernels.Buffer
	OBias                   kernels.Buffer
	QNorm, KNorm            kernels.Buffer
	Gate, Up, Down          kernels.Buffer
}

// Weights are a model's frozen base parameters on a Backend.
type Weights struct {
	Embed  kernels.Buffer // vocab × hidden
	Norm   kernels.Buffer // hidden
	LMHead kernels.Buffer // vocab × hidden; the same buffer as Embed when tied
	Layers []Layer
}

// tensorSpec names one weight tensor, its expected shape and where it goes.
type tensorSpec struct {
	name  string
	shape []int
	dst   *kernels.Buffer
}

// specs lists every tensor the config requires, with HF names and shapes.
func (c *Config) specs(w *Weights) []tensorSpec {
	h, inter, v := c.HiddenSize, c.IntermediateSize, c.VocabSize
	q, kv := c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	w.Layers = make([]Layer, c.NumLayers)
	s := []tensorSpec{{"model.embed_tokens.weight", []int{v, h}, &w.Embed}}
	for i := range w.Layers {
		l := &w.Layers[i]
		p := fmt.Sprintf("model.layers.%d.", i)
		s = append(s,
			tensorSpec{p + "input_layernorm.weight", []int{h}, &l.InputNorm},
			tensorSpec{p + "self_attn.q_proj.weight", []int{q, h}, &l.Q},
			tensorSpec{p + "self_attn.k_proj.weight", []int{kv, h}, &l.K},
			tensorSpec{p + "self_attn.v_proj.weight", []int{kv, h}, &l.V},
			tensorSpec{p + "self_attn.o_proj.weight", []int{h, q}, &l.O},
			tensorSpec{p + "post_attention_layernorm.weight", []int{h}, &l.PostAttnNorm},
			tensorSpec{p + "mlp.gate_proj.weight", []int{inter, h}, &l.Gate},
			tensorSpec{p + "mlp.up_proj.weight", []int{inter, h}, &l.Up},
			tensorSpec{p + "mlp.down_proj.weight", []int{h, inter}, &l.Down},
		)
		if c.Arch().QKVBias || c.AttentionBias {
			s = append(s,
				tensorSpec{p + "self_attn.q_proj.bias", []int{q}, &l.QBias},
				tensorSpec{p + "self_attn.k_proj.bias", []int{kv}, &l.KBias},
				tensorSpec{p + "self_attn.v_proj.bias", []int{kv}, &l.VBias})
		}
		if c.AttentionBias {
			s = append(s, tensorSpec{p + "self_attn.o_proj.bias", []int{h}, &l.OBias})
		}
		if c.Arch().QKNorm {
			s = append(s,
				tensorSpec{p + "self_attn.q_norm.weight", []int{c.HeadDim}, &l.QNorm},
				tensorSpec{p + "self_attn.k_norm.weight", []int{c.HeadDim}, &l.KNorm})
		}
	}
	s = append(s, tensorSpec{"model.norm.weight", []int{h}, &w.Norm})
	if !c.TieWordEmbeddings {
		s = append(s, tensorSpec{"lm_head.weight", []int{v, h}, &w.LMHead})
	}
	return s
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

func shapeEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
