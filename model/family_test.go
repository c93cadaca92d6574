package model

import (
	"strings"
	"testing"
)

// TestPendingFamilies: no family Lab's configs name is pending: the hub
// ids of Lab's Nemotron-3 configs pass, as do those of the other
// families grpo runs, and a nemotron_h config.json is read by its own
// reader (whose first complaint here is the missing layer pattern).
func TestPendingFamilies(t *testing.T) {
	if p := PendingFamilies(); len(p) != 0 {
		t.Errorf("pending families %v, want none", p)
	}
	for _, id := range []string{"nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16",
		"Qwen/Qwen3.5-4B", "Qwen/Qwen3.6-35B-A3B", "meta-llama/Llama-3.2-1B-Instruct", "Qwen/Qwen3-0.6B", "openai/whisper-tiny",
		"nvidia/Llama-3.1-Nemotron-Nano-8B-v1", "openai/gpt-oss-20b"} {
		if err := CheckHubID(id); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
	_, err := ParseConfig([]byte(`{"model_type": "nemotron_h", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 16}`))
	if err == nil || !strings.Contains(err.Error(), "hybrid_override_pattern") || strings.Contains(err.Error(), "\n") {
		t.Errorf("a nemotron_h config.json without its pattern: %v", err)
	}
	if _, err := ParseConfig([]byte(`{"model_type": "mamba"}`)); err == nil || strings.Contains(err.Error(), "family") {
		t.Errorf("an unknown model_type: %v", err)
	}
}
