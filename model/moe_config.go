package model

import "fmt"

// MoEConfig holds Qwen3-MoE's config.json keys (Qwen3MoeConfig in HF
// transformers, with its defaults). Layer l's MLP is a mixture of
// NumExperts experts of MoEIntermediateSize when NumExperts > 0, l is not
// in MLPOnlyLayers and (l+1) is a multiple of DecoderSparseStep; other
// layers keep the dense MLP of IntermediateSize.
type MoEConfig struct {
	NumExperts          int     `json:"num_experts"`
	NumExpertsPerTok    int     `json:"num_experts_per_tok"`
	MoEIntermediateSize int     `json:"moe_intermediate_size"`
	NormTopKProb        bool    `json:"norm_topk_prob"`
	DecoderSparseStep   int     `json:"decoder_sparse_step"`
	MLPOnlyLayers       []int   `json:"mlp_only_layers"`
	RouterAuxLossCoef   float64 `json:"router_aux_loss_coef"`
	OutputRouterLogits  bool    `json:"output_router_logits"`
	// held is the experts an expert-parallel rank's model was loaded
	// with (LoadExperts); zero: every expert.
	held struct{ first, n int }
}

// shardedExperts reports whether the config is an expert-parallel rank's
// (LoadExperts, ShardExperts): its sparse layers' experts run on the rows
// the exchange brings (moe_ep_exchange.go), which has their buffers, so
// the layer's own sets leave them out.
func (c *Config) shardedExperts() bool { return c.held.n != 0 }

// heldExperts is the range of experts the weights' specs load: every
// expert, or an expert-parallel rank's (LoadExperts).
func (c *Config) heldExperts() (first, n int) {
	if c.held.n == 0 {
		return 0, c.NumExperts
	}
	return c.held.first, c.held.n
}

// defaultMoE is Qwen3MoeConfig's defaults. They apply only to qwen3_moe:
// validateMoE clears them for dense architectures.
var defaultMoE = MoEConfig{NumExperts: 128, NumExpertsPerTok: 8, MoEIntermediateSize: 768,
	DecoderSparseStep: 1, RouterAuxLossCoef: 0.001}

// maxTopK is the most experts per token the kernels take (MOE_MAX_TOPK in
// kernels/cuda/moe.cu); real checkpoints use 8.
const maxTopK = 32

// IsSparse reports whether layer l's MLP is a mixture of experts, by HF's
// rule: not in mlp_only_layers, and (l+1) % decoder_sparse_step == 0.
func (c *Config) IsSparse(l int) bool {
	if !c.Arch().MoE || c.NumExperts == 0 {
		return false
	}
	if c.Arch().Nemotron {
		return c.blocks[l] == BlockMoE
	}
	for _, d := range c.MLPOnlyLayers {
		if d == l {
			return false
		}
	}
	return (l+1)%c.DecoderSparseStep == 0
}

// SparseLayers is the number of mixture-of-experts layers.
func (c *Config) SparseLayers() int {
	n := 0
	for l := range c.NumLayers {
		if c.IsSparse(l) {
			n++
		}
	}
	return n
}

// expertParams is the parameter count of experts experts of one layer
// plus its router.
func (c *Config) expertParams(experts int64) int64 {
	h, mi := int64(c.HiddenSize), int64(c.MoEIntermediateSize)
	// GLM-4.5's correction bias is a buffer, not a parameter, in
	// transformers' count; gpt-oss's router and experts have biases.
	if c.Arch().GptOssExperts {
		return int64(c.NumExperts)*(h+1) + experts*(3*h*mi+2*mi+h)
	}
	if c.relu2Experts() { // the experts read the latent rows of a latent MoE, the router the hidden state
		return int64(c.NumExperts)*h + experts*2*int64(c.ExpertWidth())*mi
	}
	return int64(c.NumExperts)*h + experts*3*h*mi
}

// sharedExpertParams is a sparse layer's shared expert (gate, up, down)
// and Qwen3.5-MoE's one-output gate of it.
func (c *Config) sharedExpertParams() int64 {
	h, si := int64(c.HiddenSize), int64(c.SharedExpertIntermediateSize)
	if si == 0 {
		return 0
	}
	if c.relu2Experts() {
		return 2 * h * si
	}
	if c.Arch().SigmoidRouter {
		return 3 * h * si
	}
	return 3*h*si + h
}

// ActiveParamCount is the parameters one token uses: every dense weight,
// the routers, and NumExpertsPerTok experts per sparse layer (what a
// forward's FLOPs scale with; ParamCount is what memory holds).
func (c *Config) ActiveParamCount() int64 {
	n := c.ParamCount()
	for l := range c.NumLayers {
		if c.IsSparse(l) {
			n -= c.expertParams(int64(c.NumExperts)) - c.expertParams(int64(c.NumExpertsPerTok))
		}
	}
	return n
}

func (c *Config) validateMoE(arch Arch) error {
	if !arch.MoE {
		c.MoEConfig = MoEConfig{}
		return nil
	}
	if c.NumExperts < 0 {
		return fmt.Errorf("num_experts must be ≥ 0, got %d", c.NumExperts)
	}
	if c.NumExperts == 0 {
		return nil // every layer dense, as HF allows
	}
	if c.NumExpertsPerTok <= 0 || c.NumExpertsPerTok > c.NumExperts || c.NumExpertsPerTok > maxTopK {
		return fmt.Errorf("num_experts_per_tok %d must be in 1..min(num_experts %d, %d)", c.NumExpertsPerTok, c.NumExperts, maxTopK)
	}
	if c.MoEIntermediateSize <= 0 {
		return fmt.Errorf("moe_intermediate_size must be a positive integer, got %d", c.MoEIntermediateSize)
	}
	if c.DecoderSparseStep <= 0 {
		return fmt.Errorf("decoder_sparse_step must be a positive integer, got %d", c.DecoderSparseStep)
	}
	for _, l := range c.MLPOnlyLayers {
		if l < 0 || l >= c.NumLayers {
			return fmt.Errorf("mlp_only_layers lists layer %d, outside 0..%d (num_hidden_layers %d)", l, c.NumLayers-1, c.NumLayers)
		}
	}
	if c.RouterAuxLossCoef < 0 {
		return fmt.Errorf("router_aux_loss_coef must be ≥ 0, got %v", c.RouterAuxLossCoef)
	}
	return nil
}
