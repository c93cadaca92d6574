package model

import (
	"encoding/json"
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// GptOssConfig holds the config.json keys of gpt-oss (transformers'
// GptOssConfig) that the other families do not have. validateGptOss maps
// them onto the shared ones: num_local_experts is NumExperts, every layer
// is sparse with experts of intermediate_size, and the router's
// top-k-then-softmax is MoERoute's softmax renormalised over the chosen
// (the same weights: the softmax's denominator cancels).
type GptOssConfig struct {
	NumLocalExperts int     `json:"num_local_experts"`
	SwigluLimit     float64 `json:"swiglu_limit"`
	SwigluAlpha     float64 `json:"swiglu_alpha"`
	// Window is how many keys a query of a "sliding_attention"
	// layer sees, itself included (null: none).
	Window *int `json:"sliding_window"`
	// QuantizationConfig says how the checkpoint stores the experts:
	// "mxfp4" as *_blocks and *_scales (U8), dequantized at load.
	QuantizationConfig *struct {
		QuantMethod string `json:"quant_method"`
	} `json:"quantization_config"`
}

// gptOssDefaults are GptOssConfig's defaults for every key config.json
// may leave out, set before the file's keys are read (present: the
// file's top-level keys). YaRN is the default RoPE only where the file
// names none: its keys' own defaults are transformers' YaRN's.
func (c *Config) gptOssDefaults(present map[string]json.RawMessage) {
	c.NumLayers, c.VocabSize, c.HiddenSize, c.IntermediateSize = 36, 201088, 2880, 2880
	c.HeadDim, c.NumHeads, c.NumKVHeads = 64, 64, 8
	c.RMSNormEps, c.RopeTheta, c.MaxPositions = 1e-5, 150000, 131072
	c.AttentionBias, c.TieWordEmbeddings = true, false
	c.NumExpertsPerTok, c.RouterAuxLossCoef = 4, 0.001
	_, scaling := present["rope_scaling"]
	_, params := present["rope_parameters"]
	if !scaling && !params {
		c.RopeScaling = &RopeScaling{Type: "yarn", Factor: 32, BetaFast: 32, BetaSlow: 1, Truncate: new(bool), OriginalMaxPositionEmbeddings: 4096}
	}
	window := 128
	c.GptOssConfig = GptOssConfig{NumLocalExperts: 128, SwigluLimit: 7, SwigluAlpha: 1.702, Window: &window}
}

// gptOssKeys returns a gpt-oss config.json's top-level keys; nil for
// any other model_type.
func gptOssKeys(data []byte) map[string]json.RawMessage {
	var keys map[string]json.RawMessage
	var t string
	if json.Unmarshal(data, &keys) != nil || json.Unmarshal(keys["model_type"], &t) != nil || !archs[t].GptOssExperts {
		return nil
	}
	return keys
}

// validateGptOss maps gpt-oss's keys onto Config and checks them: its
// attention has sinks and, per layer_types, sliding windows
// (AttentionVariantConfig); other architectures drop them. It runs before
// validateHybrid, which clears layer_types for a non-hybrid architecture.
func (c *Config) validateGptOss(arch Arch) error {
	if !arch.GptOssExperts {
		c.GptOssConfig = GptOssConfig{}
		return nil
	}
	g := &c.GptOssConfig
	if g.NumLocalExperts <= 0 {
		return fmt.Errorf("num_local_experts must be a positive integer, got %d", g.NumLocalExperts)
	}
	if err := c.ClampedGLU().Check(); err != nil {
		return fmt.Errorf("swiglu_alpha %v, swiglu_limit %v: %v", g.SwigluAlpha, g.SwigluLimit, err)
	}
	if q := g.QuantizationConfig; q != nil && q.QuantMethod != "mxfp4" {
		return fmt.Errorf("quantization_config.quant_method %q is not supported; gpt-oss checkpoints are bf16 or mxfp4", q.QuantMethod)
	}
	c.NumExperts, c.MoEIntermediateSize = g.NumLocalExperts, c.IntermediateSize
	c.NormTopKProb, c.DecoderSparseStep, c.MLPOnlyLayers = true, 1, nil
	c.SharedExpertIntermediateSize = 0
	types := c.LayerTypes
	if types == nil {
		// GptOssConfig's default: sliding first, then alternating.
		for l := range c.NumLayers {
			types = append(types, map[bool]string{true: "sliding_attention", false: "full_attention"}[l%2 == 0])
		}
	}
	if len(types) != c.NumLayers {
		return fmt.Errorf("layer_types lists %d layers but num_hidden_layers is %d", len(types), c.NumLayers)
	}
	window := 0 // null: no layer may slide
	if g.Window != nil {
		window = *g.Window
	}
	windows, err := SlidingWindowsFrom(types, window)
	if err != nil {
		return err
	}
	c.SlidingWindows, c.AttentionSinks = windows, true
	return c.validateMoE(arch)
}

// ClampedGLU is the experts' activation (gpt-oss).
func (c *Config) ClampedGLU() kernels.ClampedGLU {
	return kernels.ClampedGLU{Alpha: float32(c.SwigluAlpha), Limit: float32(c.SwigluLimit)}
}

// MXFP4Experts reports whether the checkpoint stores the experts in
// MXFP4 (quantization_config.quant_method "mxfp4").
func (c *Config) MXFP4Experts() bool {
	return c.QuantizationConfig != nil && c.QuantizationConfig.QuantMethod == "mxfp4"
}

// MXFP4ExpertParams is how many of the parameters are MXFP4 expert
// weights (every sparse layer's gate_up_proj and down_proj, not their
// biases): what a GPU keeps at 4.25 bits each (kernels.MXFP4Bytes); 0
// unless the checkpoint stores its experts in MXFP4.
func (c *Config) MXFP4ExpertParams() int64 {
	if !c.MXFP4Experts() {
		return 0
	}
	return int64(c.SparseLayers()) * int64(c.NumExperts) * 3 * int64(c.HiddenSize) * int64(c.MoEIntermediateSize)
}
