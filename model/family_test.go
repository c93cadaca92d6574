package model

import (
	"strings"
	"testing"
)

// TestPendingFamilies: the hub ids of Lab's Nemotron-3 configs, and a
// config.json of its model_type, fail with one line naming the family;
// the ids of families grpo runs (Qwen3.5/3.6 and gpt-oss included) pass.
func TestPendingFamilies(t *testing.T) {
	for id, family := range map[string]string{
		"nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16":    "Nemotron-3",
		"nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16": "Nemotron-3",
	} {
		err := CheckHubID(id)
		if err == nil || !strings.Contains(err.Error(), "the "+family+" model family") || !strings.Contains(err.Error(), "not supported yet") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v", id, err)
		}
	}
	for _, id := range []string{"Qwen/Qwen3.5-4B", "Qwen/Qwen3.6-35B-A3B", "meta-llama/Llama-3.2-1B-Instruct", "Qwen/Qwen3-0.6B", "openai/whisper-tiny", "nvidia/Llama-3.1-Nemotron-Nano-8B-v1", "openai/gpt-oss-20b"} {
		if err := CheckHubID(id); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
	for mt, family := range map[string]string{"nemotron_h": "Nemotron-3"} {
		_, err := ParseConfig([]byte(`{"model_type": "` + mt + `", "hidden_size": 64}`))
		if err == nil || !strings.Contains(err.Error(), "the "+family+" model family (model_type "+mt+") is not supported yet") {
			t.Errorf("config.json model_type %s: %v", mt, err)
		}
	}
	for _, p := range PendingFamilies() {
		if err := CheckHubID(p.Example); err == nil || !strings.Contains(err.Error(), p.Name) {
			t.Errorf("%s's example %s: %v", p.Name, p.Example, err)
		}
	}
	if _, err := ParseConfig([]byte(`{"model_type": "mamba"}`)); err == nil || strings.Contains(err.Error(), "family") {
		t.Errorf("an unknown model_type: %v", err)
	}
}
