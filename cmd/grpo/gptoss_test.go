package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/grpo-dev/grpo/internal/tinymodel"
)

// TestGptOssTrainsLabConfig: Lab's configs/rl/gpt-oss.toml trains as
// written, the model and sizes aside, on the tiny MXFP4 gpt-oss (experts
// dequantized at load), and writes its adapter as PEFT adapts
// GptOssForCausalLM: attention by target_modules, the experts by
// target_parameters.
func TestGptOssTrainsLabConfig(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lab")
	if code, _, stderr := runCLI("init", dir); code != 0 {
		t.Fatal(stderr)
	}
	model := filepath.Join(t.TempDir(), "model")
	if err := tinymodel.Write(model, filepath.Join("..", "..", "testdata", "models", "gpt_oss-tiny-mxfp4")); err != nil {
		t.Fatal(err)
	}
	cacheReverseText(t)
	t.Chdir(dir)
	var code int
	var out, stderr string
	withOSStderr(t, func() {
		code, out, stderr = runCLI("train", "configs/rl/gpt-oss.toml", "--set", "model="+model, "--max-steps", "1", "--batch-size", "4",
			"--set", "rollouts_per_example=2", "--set", "sampling.max_tokens=4", "--output", "runs/oss")
	})
	raw, err := os.ReadFile("runs/oss/adapter/adapter_config.json")
	if code != 0 || err != nil {
		t.Fatalf("train gpt-oss.toml: exit %d %v %s\n%s", code, err, stderr, out)
	}
	var cfg struct {
		TargetModules    []string `json:"target_modules"`
		TargetParameters []string `json:"target_parameters"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.TargetModules, []string{"q_proj", "k_proj", "v_proj", "o_proj"}) ||
		!slices.Equal(cfg.TargetParameters, []string{"mlp.experts.gate_up_proj", "mlp.experts.down_proj"}) {
		t.Errorf("adapter targets %v and parameters %v", cfg.TargetModules, cfg.TargetParameters)
	}
}
