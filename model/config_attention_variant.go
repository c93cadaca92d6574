package model

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// AttentionVariantConfig is what a family's attention layers compute
// beyond plain causal softmax attention, layer by layer (gpt-oss:
// sliding-window layers between full ones, and attention sinks). The
// family's config reader sets it; config.json's keys differ by family
// (gpt-oss: layer_types with sliding_window, and sinks always), so no
// JSON key maps here directly.
type AttentionVariantConfig struct {
	// SlidingWindows, when not nil, holds per layer the sliding window in
	// keys (kernels.AttentionVariant.Window): sliding_window for a layer
	// whose layer_types entry is "sliding_attention", 0 (full causal
	// attention) for "full_attention".
	SlidingWindows []int `json:"-"`
	// AttentionSinks: every attention layer has one learned sink logit
	// per query head, model.layers.N.self_attn.sinks [num_attention_heads],
	// kept in f32 and frozen (LoRA never trains it).
	AttentionSinks bool `json:"-"`
}

// SlidingWindow is layer l's sliding window in keys, 0 for full attention.
func (c *AttentionVariantConfig) SlidingWindow(l int) int {
	if c.SlidingWindows == nil {
		return 0
	}
	return c.SlidingWindows[l]
}

// SlidingWindowsFrom resolves HF's layer_types and sliding_window into
// SlidingWindows: "sliding_attention" layers get window, "full_attention"
// layers 0.
func SlidingWindowsFrom(layerTypes []string, window int) ([]int, error) {
	w := make([]int, len(layerTypes))
	for l, t := range layerTypes {
		switch t {
		case "sliding_attention":
			if window <= 0 {
				return nil, fmt.Errorf("layer_types[%d] is \"sliding_attention\" but sliding_window is %d; want a positive number of keys", l, window)
			}
			w[l] = window
		case "full_attention":
		default:
			return nil, fmt.Errorf("layer_types[%d] is %q; want \"sliding_attention\" or \"full_attention\"", l, t)
		}
	}
	return w, nil
}

// validateAttentionVariants checks SlidingWindows against the layers.
func (c *Config) validateAttentionVariants() error {
	if c.SlidingWindows == nil {
		return nil
	}
	if len(c.SlidingWindows) != c.NumLayers {
		return fmt.Errorf("sliding windows list %d layers but num_hidden_layers is %d", len(c.SlidingWindows), c.NumLayers)
	}
	for l, w := range c.SlidingWindows {
		if w < 0 {
			return fmt.Errorf("layer %d: sliding window %d is negative", l, w)
		}
	}
	return nil
}

// attnVariant is layer l's attention variant for the kernels: its
// sliding window and its sinks (nil unless the family has them).
func (m *Model) attnVariant(l int) kernels.AttentionVariant {
	return kernels.AttentionVariant{Window: m.Config.SlidingWindow(l), Sinks: m.W.Layers[l].Sinks}
}
