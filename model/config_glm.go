package model

import (
	"encoding/json"
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// GLMMoEConfig holds the config.json keys of GLM-4.5 and INTELLECT-3
// (transformers' Glm4MoeConfig) that Qwen3-MoE's MoEConfig does not
// have. validateGLM maps them onto the shared ones: n_routed_experts is
// NumExperts, layers below first_k_dense_replace are MLPOnlyLayers, the
// shared experts one SwiGLU of moe_intermediate_size × n_shared_experts.
type GLMMoEConfig struct {
	NRoutedExperts      int     `json:"n_routed_experts"`
	NSharedExperts      int     `json:"n_shared_experts"`
	FirstKDenseReplace  int     `json:"first_k_dense_replace"`
	RoutedScalingFactor float64 `json:"routed_scaling_factor"`
	NGroup              int     `json:"n_group"`
	TopKGroup           int     `json:"topk_group"`
	UseQKNorm           bool    `json:"use_qk_norm"`
	// NumNextNPredictLayers is the multi-token-prediction layers the
	// checkpoint stores past num_hidden_layers; Load skips them.
	NumNextNPredictLayers int `json:"num_nextn_predict_layers"`
}

// defaultGLM is Glm4MoeConfig's defaults for these keys.
var defaultGLM = GLMMoEConfig{NRoutedExperts: 128, NSharedExperts: 1, FirstKDenseReplace: 1,
	RoutedScalingFactor: 1, NGroup: 1, TopKGroup: 1}

// glmSharedDefaults are Glm4MoeConfig's defaults for keys it shares with
// the other families but defaults differently; they apply where
// config.json leaves the key out.
func (c *Config) glmSharedDefaults(present map[string]json.RawMessage) {
	def := func(key string, set func()) {
		if _, ok := present[key]; !ok {
			set()
		}
	}
	def("moe_intermediate_size", func() { c.MoEIntermediateSize = 1408 })
	def("norm_topk_prob", func() { c.NormTopKProb = true })
	def("rms_norm_eps", func() { c.RMSNormEps = 1e-5 })
}

// validateGLM maps GLM-4.5's MoE keys onto Config and checks them;
// other architectures drop them.
func (c *Config) validateGLM(arch Arch, data []byte) error {
	if !arch.SigmoidRouter {
		c.GLMMoEConfig = GLMMoEConfig{}
		return nil
	}
	if arch.Nemotron {
		return nil // the same router keys, Nemotron-H's own mapping (validateNemotron)
	}
	var present map[string]json.RawMessage
	if err := json.Unmarshal(data, &present); err != nil {
		return configJSONError(data, err)
	}
	c.glmSharedDefaults(present)
	g := c.GLMMoEConfig
	if g.FirstKDenseReplace < 0 || g.FirstKDenseReplace > c.NumLayers {
		return fmt.Errorf("first_k_dense_replace %d must be in 0..num_hidden_layers %d", g.FirstKDenseReplace, c.NumLayers)
	}
	if g.NSharedExperts < 0 {
		return fmt.Errorf("n_shared_experts must be ≥ 0, got %d", g.NSharedExperts)
	}
	if !(g.RoutedScalingFactor > 0) {
		return fmt.Errorf("routed_scaling_factor must be positive, got %v", g.RoutedScalingFactor)
	}
	if g.NumNextNPredictLayers < 0 {
		return fmt.Errorf("num_nextn_predict_layers must be ≥ 0, got %d", g.NumNextNPredictLayers)
	}
	c.NumExperts = g.NRoutedExperts
	// Glm4MoeForCausalLM adds no load-balancing loss (the correction bias
	// balances the load), and HF's is over softmax probabilities.
	c.RouterAuxLossCoef = 0
	c.DecoderSparseStep = 1
	c.MLPOnlyLayers = nil
	for l := range g.FirstKDenseReplace {
		c.MLPOnlyLayers = append(c.MLPOnlyLayers, l)
	}
	c.SharedExpertIntermediateSize = c.MoEIntermediateSize * g.NSharedExperts
	if err := c.validateMoE(arch); err != nil {
		return err
	}
	if c.NumExperts > 0 {
		if err := c.SigmoidRouting().Check(c.NumExperts, c.NumExpertsPerTok); err != nil {
			return fmt.Errorf("n_group %d, topk_group %d: %v", g.NGroup, g.TopKGroup, err)
		}
	}
	return nil
}

// SigmoidRouting is the sparse layers' router settings (GLM-4.5).
func (c *Config) SigmoidRouting() kernels.SigmoidRouting {
	return kernels.SigmoidRouting{Groups: c.NGroup, TopKGroups: c.TopKGroup, NormTopK: c.NormTopKProb,
		Scale: float32(c.RoutedScalingFactor)}
}
