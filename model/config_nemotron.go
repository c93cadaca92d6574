package model

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
)

// NemotronConfig holds the config.json keys of Nemotron-3 (transformers'
// NemotronHConfig, model_type nemotron_h) that the other families do not
// have. A Nemotron-H layer is one block behind one pre-norm: a Mamba-2
// mixer (M), attention without RoPE (*), a mixture of relu² experts (E)
// or a dense relu² MLP (-), as hybrid_override_pattern (the published
// checkpoints' key) or layers_block_type (transformers' current one)
// says. The MoE's router keys (n_routed_experts, n_group, topk_group,
// routed_scaling_factor) are GLMMoEConfig's, the same router.
//
// Keys read and ignored, and why: time_step_min, time_step_max and
// time_step_floor only initialise dt_bias (and transformers' slow path
// clamps dt below at time_step_min, which the fused kernels that vLLM
// and the checkpoint's own code run do not: kernels.SSMOps); expand is
// mamba_num_heads·mamba_head_dim / hidden_size, which the heads already
// give; chunk_size is the fused scan's tiling, not the result;
// residual_in_fp32 (the residual stream is f32 here anyway),
// rescale_prenorm_residual and initializer_range are initialisation;
// mamba_ssm_cache_dtype (the state is kept in f32).
type NemotronConfig struct {
	HybridOverridePattern string   `json:"hybrid_override_pattern"`
	LayersBlockType       []string `json:"layers_block_type"`
	MambaNumHeads         int      `json:"mamba_num_heads"`
	MambaHeadDim          int      `json:"mamba_head_dim"`
	SSMStateSize          int      `json:"ssm_state_size"`
	MambaGroups           int      `json:"n_groups"`
	ConvKernel            int      `json:"conv_kernel"`
	UseConvBias           bool     `json:"use_conv_bias"`
	MambaHiddenAct        string   `json:"mamba_hidden_act"`
	MLPHiddenAct          string   `json:"mlp_hidden_act"`
	// TimeStepLimit is the (lower, upper) clamp of dt that vLLM and the
	// fused kernels apply; only the default (0, ∞) is supported.
	TimeStepLimit []float64 `json:"time_step_limit"`
	// SharedExpertSize is the MoE's shared relu² MLP's width.
	SharedExpertSize int     `json:"moe_shared_expert_intermediate_size"`
	LayerNormEpsilon float64 `json:"layer_norm_epsilon"`
	// Biases a Nemotron-3 checkpoint does not have; refused when set.
	MambaProjBias bool `json:"mamba_proj_bias"`
	UseBias       bool `json:"use_bias"`
	// MoELatentSize is Nemotron-3-Super's latent MoE width: set, the
	// routed experts run between fc1_latent_proj (hidden → latent) and
	// fc2_latent_proj (latent → hidden); null (Nano), on the hidden
	// state itself (MoELatent).
	MoELatentSize *int `json:"moe_latent_size"`
	// blocks is each layer's block, resolved from the pattern.
	blocks []NemotronBlock
	// nemotronRoot is where the checkpoint keeps the model's tensors
	// (TensorPrefix): "" for backbone., the published checkpoints'
	// root, or "model." (transformers' current class), as Load finds.
	nemotronRoot string
}

// NemotronBlock is the one block of a Nemotron-H layer, by its pattern
// letter.
type NemotronBlock byte

const (
	BlockMamba     NemotronBlock = 'M'
	BlockAttention NemotronBlock = '*'
	BlockMoE       NemotronBlock = 'E'
	BlockMLP       NemotronBlock = '-'
)

// nemotronLayerTypes are layers_block_type's names (and the legacy ones
// transformers remaps) for the pattern letters.
var nemotronLayerTypes = map[string]NemotronBlock{
	"linear_attention": BlockMamba, "mamba": BlockMamba,
	"full_attention": BlockAttention, "attention": BlockAttention,
	"moe": BlockMoE, "mlp": BlockMLP,
}

// defaultNemotron is NemotronHConfig's defaults for these keys.
var defaultNemotron = NemotronConfig{MambaNumHeads: 128, MambaHeadDim: 64, SSMStateSize: 128, MambaGroups: 8,
	ConvKernel: 4, UseConvBias: true, MambaHiddenAct: "silu", MLPHiddenAct: "relu2", SharedExpertSize: 7688,
	LayerNormEpsilon: 1e-5}

// nemotronDefaults sets NemotronHConfig's defaults for keys the other
// families share but default differently, where config.json (data)
// leaves them out.
func (c *Config) nemotronDefaults(data []byte) error {
	var present map[string]json.RawMessage
	if err := json.Unmarshal(data, &present); err != nil {
		return configJSONError(data, err)
	}
	def := func(key string, set func()) {
		if _, ok := present[key]; !ok {
			set()
		}
	}
	def("n_routed_experts", func() { c.NRoutedExperts = 8 })
	def("num_experts_per_tok", func() { c.NumExpertsPerTok = 2 })
	def("moe_intermediate_size", func() { c.MoEIntermediateSize = 7688 })
	def("norm_topk_prob", func() { c.NormTopKProb = true })
	def("intermediate_size", func() { c.IntermediateSize = 21504 })
	def("num_key_value_heads", func() { c.NumKVHeads = 8 })
	def("head_dim", func() { c.HeadDim = 128 })
	return nil
}

// Block is layer l's block in a Nemotron-H model.
func (c *Config) Block(l int) NemotronBlock { return c.blocks[l] }

// MoELatent is the latent MoE's width (moe_latent_size), 0 where the
// experts read the hidden state (every model but Nemotron-3-Super).
func (c *Config) MoELatent() int {
	if l := c.MoELatentSize; l != nil && c.Arch().Nemotron {
		return *l
	}
	return 0
}

// ExpertWidth is the width of the rows the routed experts read and
// write: the latent size of a latent MoE, the hidden size otherwise.
func (c *Config) ExpertWidth() int { return cmp.Or(c.MoELatent(), c.HiddenSize) }

// MambaDim is a Mamba-2 mixer's inner width (heads × head dim), and
// MambaConvDim its conv's channels: x | B | C.
func (c *Config) MambaDim() int     { return c.MambaNumHeads * c.MambaHeadDim }
func (c *Config) MambaConvDim() int { return c.MambaDim() + 2*c.MambaGroups*c.SSMStateSize }

// MambaInProjDim is in_proj's output: z | xBC | dt.
func (c *Config) MambaInProjDim() int { return c.MambaDim() + c.MambaConvDim() + c.MambaNumHeads }

// mambaParams is a Mamba-2 mixer's parameters: in_proj, conv1d (with
// its bias), dt_bias, A_log, D, the gated norm and out_proj.
func (c *Config) mambaParams() int64 {
	h, d, conv, nh := int64(c.HiddenSize), int64(c.MambaDim()), int64(c.MambaConvDim()), int64(c.MambaNumHeads)
	p := h*int64(c.MambaInProjDim()) + conv*int64(c.ConvKernel) + 3*nh + d + d*h
	if c.UseConvBias {
		p += conv
	}
	return p
}

// validateNemotron resolves the layer pattern and checks the Mamba-2,
// attention and MoE keys of a nemotron_h config; other architectures
// drop them.
func (c *Config) validateNemotron(arch Arch) error {
	if !arch.Nemotron {
		c.NemotronConfig = NemotronConfig{}
		return nil
	}
	n := c.NemotronConfig
	switch {
	case n.LayersBlockType != nil:
		for i, t := range n.LayersBlockType {
			b, ok := nemotronLayerTypes[t]
			if !ok {
				return fmt.Errorf("layers_block_type[%d] is %q; supported: \"linear_attention\" (Mamba-2), \"full_attention\", \"moe\", \"mlp\"", i, t)
			}
			c.blocks = append(c.blocks, b)
		}
	case n.HybridOverridePattern != "":
		for i, r := range n.HybridOverridePattern {
			switch b := NemotronBlock(r); b {
			case BlockMamba, BlockAttention, BlockMoE, BlockMLP:
				c.blocks = append(c.blocks, b)
			default:
				return fmt.Errorf("hybrid_override_pattern: %q at position %d is not a layer kind; supported: M (Mamba-2), * (attention), E (MoE), - (MLP)", r, i)
			}
		}
	default:
		return fmt.Errorf("a nemotron_h config needs hybrid_override_pattern (or layers_block_type), one letter per layer")
	}
	if len(c.blocks) != c.NumLayers {
		return fmt.Errorf("hybrid_override_pattern has %d layers but num_hidden_layers is %d", len(c.blocks), c.NumLayers)
	}
	c.mixers = make([]TokenMixer, c.NumLayers)
	for l, b := range c.blocks {
		c.mixers[l] = map[NemotronBlock]TokenMixer{BlockMamba: MixMamba2, BlockAttention: MixAttention, BlockMoE: MixNone, BlockMLP: MixNone}[b]
	}
	for _, f := range []struct {
		key string
		v   int
	}{{"mamba_num_heads", n.MambaNumHeads}, {"mamba_head_dim", n.MambaHeadDim}, {"ssm_state_size", n.SSMStateSize},
		{"n_groups", n.MambaGroups}, {"conv_kernel", n.ConvKernel}} {
		if f.v <= 0 {
			return fmt.Errorf("%s must be a positive integer, got %d", f.key, f.v)
		}
	}
	if n.MambaNumHeads%n.MambaGroups != 0 {
		return fmt.Errorf("mamba_num_heads %d is not a multiple of n_groups %d", n.MambaNumHeads, n.MambaGroups)
	}
	if n.ConvKernel > maxConvKernel {
		return fmt.Errorf("conv_kernel %d is above the supported %d", n.ConvKernel, maxConvKernel)
	}
	if !n.UseConvBias {
		return fmt.Errorf("use_conv_bias: false is not supported (Nemotron-3's conv1d has a bias)")
	}
	if n.MambaHiddenAct != "silu" && n.MambaHiddenAct != "swish" {
		return fmt.Errorf("mamba_hidden_act %q is not supported; only \"silu\" is", n.MambaHiddenAct)
	}
	if n.MLPHiddenAct != "relu2" {
		return fmt.Errorf("mlp_hidden_act %q is not supported; only \"relu2\" is", n.MLPHiddenAct)
	}
	if l := n.TimeStepLimit; l != nil && (len(l) != 2 || l[0] != 0 || !math.IsInf(l[1], 1)) {
		return fmt.Errorf("time_step_limit %v is not supported; only the default [0.0, inf] (no clamp) is", l)
	}
	if n.MambaProjBias || n.UseBias {
		return fmt.Errorf("mamba_proj_bias / use_bias: true is not supported (Nemotron-3's projections have no biases)")
	}
	if l := n.MoELatentSize; l != nil && (*l <= 0 || *l > c.HiddenSize) {
		return fmt.Errorf("moe_latent_size must be in 1..hidden_size %d (or null), got %d", c.HiddenSize, *l)
	}
	if !(n.LayerNormEpsilon > 0) || math.IsInf(n.LayerNormEpsilon, 0) {
		return fmt.Errorf("layer_norm_epsilon must be positive, got %v", n.LayerNormEpsilon)
	}
	c.RMSNormEps = n.LayerNormEpsilon
	if c.TieWordEmbeddings {
		return fmt.Errorf("tie_word_embeddings: true is not supported for nemotron_h (its checkpoints keep their own lm_head)")
	}
	return c.validateNemotronMoE(arch)
}

// validateNemotronMoE maps the MoE keys onto Config's and checks them,
// and the dense MLP's and attention's where the pattern has them.
func (c *Config) validateNemotronMoE(arch Arch) error {
	has := func(b NemotronBlock) bool {
		for _, x := range c.blocks {
			if x == b {
				return true
			}
		}
		return false
	}
	if has(BlockMLP) && c.IntermediateSize <= 0 {
		return fmt.Errorf("intermediate_size must be a positive integer, got %d", c.IntermediateSize)
	}
	// Attention has no RoPE (rotaryDim 2 with a zero frequency, Config.RotaryDim), and no bias.
	if c.AttentionBias {
		return fmt.Errorf("attention_bias: true is not supported for nemotron_h")
	}
	c.DecoderSparseStep = 1
	c.MLPOnlyLayers = nil
	c.RouterAuxLossCoef = 0
	c.NumExperts = 0
	c.SharedExpertIntermediateSize = 0
	if !has(BlockMoE) {
		return nil
	}
	c.NumExperts = c.NRoutedExperts
	c.SharedExpertIntermediateSize = c.SharedExpertSize
	if c.NumExperts <= 0 {
		return fmt.Errorf("n_routed_experts must be a positive integer, got %d", c.NumExperts)
	}
	if c.SharedExpertIntermediateSize <= 0 {
		return fmt.Errorf("moe_shared_expert_intermediate_size must be a positive integer, got %d", c.SharedExpertIntermediateSize)
	}
	if !(c.RoutedScalingFactor > 0) {
		return fmt.Errorf("routed_scaling_factor must be positive, got %v", c.RoutedScalingFactor)
	}
	if err := c.validateMoE(arch); err != nil {
		return err
	}
	if err := c.SigmoidRouting().Check(c.NumExperts, c.NumExpertsPerTok); err != nil {
		return fmt.Errorf("n_group %d, topk_group %d: %v", c.NGroup, c.TopKGroup, err)
	}
	return nil
}
