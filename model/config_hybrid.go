package model

import (
	"fmt"
	"math"
)

// TokenMixer is the kind of a layer's token mixer: what mixes information
// across positions, and so what the layer keeps per sequence between
// forwards (its cache kind).
type TokenMixer uint8

const (
	// MixAttention is full causal attention over a paged KV cache.
	MixAttention TokenMixer = iota
	// MixGatedDeltaNet is gated DeltaNet linear attention (Qwen3.5's
	// "linear_attention" layers): no KV cache, a fixed-size recurrent
	// state per sequence (kernels.LinearOps).
	MixGatedDeltaNet
	// MixMamba2 is a Mamba-2 mixer (Nemotron-H's M layers): a conv state
	// and an SSM state per sequence (kernels.SSMOps).
	MixMamba2
	// MixNone is no token mixer: a layer of a channel mixer alone
	// (Nemotron-H's E and - layers), which keeps nothing per sequence.
	MixNone
)

func (k TokenMixer) String() string {
	return [...]string{"full_attention", "linear_attention", "mamba2", "none"}[k]
}

// recurrent reports whether the mixer keeps a fixed-size state per
// sequence (the linear states of cache_linear.go) rather than a KV cache.
func (k TokenMixer) recurrent() bool { return k == MixGatedDeltaNet || k == MixMamba2 }

// HybridConfig holds the keys of Qwen3.5 / Qwen3.6 (Qwen3_5TextConfig and
// Qwen3_5MoeTextConfig in HF transformers): which layers are linear
// attention, and the gated DeltaNet's shapes.
type HybridConfig struct {
	LayerTypes            []string `json:"layer_types"`
	FullAttentionInterval int      `json:"full_attention_interval"`
	LinearConvKernel      int      `json:"linear_conv_kernel_dim"`
	LinearKeyHeadDim      int      `json:"linear_key_head_dim"`
	LinearValueHeadDim    int      `json:"linear_value_head_dim"`
	LinearNumKeyHeads     int      `json:"linear_num_key_heads"`
	LinearNumValueHeads   int      `json:"linear_num_value_heads"`
	// PartialRotaryFactor is the fraction of each attention head RoPE
	// rotates (rope_parameters.partial_rotary_factor; 0.25 in Qwen3.5);
	// 0 or 1 rotates all of it.
	PartialRotaryFactor float64 `json:"partial_rotary_factor"`
	// SharedExpertIntermediateSize is the shared expert's width in a
	// Qwen3.5-MoE layer (added to the routed experts, scaled by
	// sigmoid(shared_expert_gate·x)); 0 for none.
	SharedExpertIntermediateSize int `json:"shared_expert_intermediate_size"`
	mixers                       []TokenMixer
}

// defaultHybrid is Qwen3_5TextConfig's defaults; only hybrid
// architectures keep them (validateHybrid clears them for the others).
var defaultHybrid = HybridConfig{FullAttentionInterval: 4, LinearConvKernel: 4, LinearKeyHeadDim: 128,
	LinearValueHeadDim: 128, LinearNumKeyHeads: 16, LinearNumValueHeads: 32, PartialRotaryFactor: 0.25}

// maxConvKernel bounds linear_conv_kernel_dim: the conv state is kernel−1
// rows per sequence, and the kernels keep a row of taps in registers.
const maxConvKernel = 8

// Mixer is layer l's token mixer.
func (c *Config) Mixer(l int) TokenMixer {
	if l < len(c.mixers) {
		return c.mixers[l]
	}
	return MixAttention
}

// LinearLayers is the number of layers with a recurrent state (gated
// DeltaNet or Mamba-2).
func (c *Config) LinearLayers() int {
	n := 0
	for l := range c.NumLayers {
		if c.Mixer(l).recurrent() {
			n++
		}
	}
	return n
}

// RecurrentMixerName names the kind of the layers LinearLayers counts, for
// messages and estimates: "Mamba-2" or "DeltaNet" (a model has one kind).
func (c *Config) RecurrentMixerName() string {
	for l := range c.NumLayers {
		if c.Mixer(l) == MixMamba2 {
			return "Mamba-2"
		}
	}
	return "DeltaNet"
}

// AttentionLayers is the number of layers with a KV cache.
func (c *Config) AttentionLayers() int {
	n := 0
	for l := range c.NumLayers {
		if c.Mixer(l) == MixAttention {
			n++
		}
	}
	return n
}

// RotaryDim is the leading part of each attention head that RoPE rotates.
func (c *Config) RotaryDim() int {
	if c.Arch().Nemotron {
		// No RoPE: the fused kernels rotate at least one pair, which
		// RopeInvFreq's zero frequency leaves exactly as it is
		// (cos 0 = 1, sin 0 = 0).
		return 2
	}
	if f := c.PartialRotaryFactor; f > 0 && f < 1 {
		return int(float64(c.HeadDim) * f)
	}
	return c.HeadDim
}

// LinearKeyDim and LinearValueDim are a DeltaNet layer's query/key and
// value widths; LinearConvDim the channels of its convolution (q | k | v).
func (c *Config) LinearKeyDim() int   { return c.LinearNumKeyHeads * c.LinearKeyHeadDim }
func (c *Config) LinearValueDim() int { return c.LinearNumValueHeads * c.LinearValueHeadDim }
func (c *Config) LinearConvDim() int  { return 2*c.LinearKeyDim() + c.LinearValueDim() }

// ConvStateWidth and RecurrentStateWidth are one sequence's state in one
// DeltaNet layer, in elements: the conv's last kernel−1 inputs and the
// value heads' dimK × dimV matrices.
// A Mamba-2 layer's are its conv's last kernel−1 inputs (x | B | C) and
// its heads' headDim × stateSize matrices. A model has one kind of
// recurrent layer.
func (c *Config) ConvStateWidth() int {
	if c.Arch().Nemotron {
		return (c.ConvKernel - 1) * c.MambaConvDim()
	}
	return (c.LinearConvKernel - 1) * c.LinearConvDim()
}
func (c *Config) RecurrentStateWidth() int {
	if c.Arch().Nemotron {
		return c.MambaNumHeads * c.MambaHeadDim * c.SSMStateSize
	}
	return c.LinearNumValueHeads * c.LinearKeyHeadDim * c.LinearValueHeadDim
}

// linearLayerParams is a gated DeltaNet token mixer's parameters:
// in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, conv1d, A_log, dt_bias,
// the gated norm and out_proj.
func (c *Config) linearLayerParams() int64 {
	h, conv, vd := int64(c.HiddenSize), int64(c.LinearConvDim()), int64(c.LinearValueDim())
	hv := int64(c.LinearNumValueHeads)
	return h*conv + h*vd + 2*h*hv + conv*int64(c.LinearConvKernel) + 2*hv + int64(c.LinearValueHeadDim) + vd*h
}

// validateHybrid resolves layer_types (or full_attention_interval) into
// the layers' mixers and checks the DeltaNet shapes.
func (c *Config) validateHybrid(arch Arch) error {
	if !arch.Hybrid {
		c.HybridConfig = HybridConfig{}
		return nil
	}
	c.mixers = make([]TokenMixer, c.NumLayers)
	if c.LayerTypes != nil {
		if len(c.LayerTypes) != c.NumLayers {
			return fmt.Errorf("layer_types lists %d layers but num_hidden_layers is %d", len(c.LayerTypes), c.NumLayers)
		}
		for l, t := range c.LayerTypes {
			switch t {
			case "linear_attention":
				c.mixers[l] = MixGatedDeltaNet
			case "full_attention":
			default:
				return fmt.Errorf("layer_types[%d] is %q; supported: \"linear_attention\", \"full_attention\"", l, t)
			}
		}
	} else {
		if c.FullAttentionInterval <= 0 {
			return fmt.Errorf("full_attention_interval must be a positive integer, got %d", c.FullAttentionInterval)
		}
		// transformers' rule: layer l is full attention when (l+1) is a
		// multiple of the interval.
		for l := range c.mixers {
			if (l+1)%c.FullAttentionInterval != 0 {
				c.mixers[l] = MixGatedDeltaNet
			}
		}
	}
	for _, f := range []struct {
		key string
		v   int
	}{{"linear_num_key_heads", c.LinearNumKeyHeads}, {"linear_num_value_heads", c.LinearNumValueHeads},
		{"linear_key_head_dim", c.LinearKeyHeadDim}, {"linear_value_head_dim", c.LinearValueHeadDim}} {
		if f.v <= 0 {
			return fmt.Errorf("%q must be a positive integer, got %d", f.key, f.v)
		}
	}
	if c.LinearNumValueHeads%c.LinearNumKeyHeads != 0 {
		return fmt.Errorf("linear_num_value_heads %d is not a multiple of linear_num_key_heads %d", c.LinearNumValueHeads, c.LinearNumKeyHeads)
	}
	if c.LinearConvKernel < 1 || c.LinearConvKernel > maxConvKernel {
		return fmt.Errorf("linear_conv_kernel_dim must be in 1..%d, got %d", maxConvKernel, c.LinearConvKernel)
	}
	if f := c.PartialRotaryFactor; !(f >= 0 && f <= 1) || math.IsNaN(f) {
		return fmt.Errorf("partial_rotary_factor must be in (0, 1], got %v", f)
	}
	if r := c.RotaryDim(); r <= 0 || r%2 != 0 {
		return fmt.Errorf("head_dim %d × partial_rotary_factor %v = %d rotary dims: want a positive even number", c.HeadDim, c.PartialRotaryFactor, r)
	}
	if arch.MoE {
		c.NormTopKProb = true // Qwen3.5-MoE's router always renormalises its top k
	}
	if c.SharedExpertIntermediateSize < 0 {
		return fmt.Errorf("shared_expert_intermediate_size must be ≥ 0, got %d", c.SharedExpertIntermediateSize)
	}
	return nil
}

// checkAttentionVariant applies config.json's explicit
// attn_output_gate and partial_rotary_factor: an architecture whose
// attention layers do not gate (or rotate part of each head) refuses a
// config that says they do, rather than run as a different model.
func (c *Config) checkAttentionVariant(arch Arch, gate *bool, partial *float64) error {
	if gate != nil && *gate != arch.OutputGate {
		return fmt.Errorf("attn_output_gate: %v is not supported for model_type %q, whose attention layers are always %s", *gate, c.ModelType, map[bool]string{true: "gated", false: "ungated"}[arch.OutputGate])
	}
	if partial == nil && arch.DefaultPartialRotary > 0 {
		partial = &arch.DefaultPartialRotary
	}
	if partial == nil {
		return nil
	}
	if f := *partial; !(f > 0 && f <= 1) {
		return fmt.Errorf("partial_rotary_factor must be in (0, 1], got %v", f)
	}
	if arch.Hybrid || arch.PartialRotary {
		c.PartialRotaryFactor = *partial
		if r := c.RotaryDim(); r <= 0 || r%2 != 0 {
			return fmt.Errorf("head_dim %d × partial_rotary_factor %v = %d rotary dims: want a positive even number", c.HeadDim, *partial, r)
		}
		return nil
	}
	if *partial != 1 {
		return fmt.Errorf("partial_rotary_factor %v is not supported for model_type %q (RoPE on %d of %d dims); its attention rotates whole heads", *partial, c.ModelType, int(float64(c.HeadDim)**partial), c.HeadDim)
	}
	return nil
}
