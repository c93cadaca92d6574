package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/config"
)

// TestTrainOverrides: --max-steps and --set change the run, and the run
// directory's config.toml has them written in, so it parses to the config
// that ran (what --resume reads).
func TestTrainOverrides(t *testing.T) {
	dir, model, envDir := tinyModelAndEnv(t)
	cfg := filepath.Join(dir, "run.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("model = %q\nmax_steps = 50\nbatch_size = 4\nrollouts_per_example = 2\n[[env]]\nid = %q\n[lora]\nrank = 2\nalpha = 4\n", model, envDir)), 0o644)
	run := filepath.Join(dir, "run")
	var code int
	var stderr string
	withOSStderr(t, func() {
		code, _, stderr = runCLI("train", cfg, "--output", run, "--max-steps", "2", "--set", "sampling.max_tokens=3", "--seed", "9")
	})
	if code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	metrics, _ := os.ReadFile(filepath.Join(run, "metrics.jsonl"))
	if n := strings.Count(string(metrics), "\n"); n != 2 {
		t.Errorf("--max-steps 2: %d steps in metrics.jsonl", n)
	}
	recorded, err := config.Load(filepath.Join(run, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if recorded.MaxSteps != 2 || recorded.Sampling.MaxTokens != 3 || recorded.Seed != 9 {
		t.Errorf("recorded config: max_steps %d, max_tokens %d, seed %d; want 2, 3, 9", recorded.MaxSteps, recorded.Sampling.MaxTokens, recorded.Seed)
	}
}

// TestTrainConfigProblems: grpo train reports every problem of a config
// before starting — the file's, the overrides' (named by their flag) and
// the env ids' — and refuses overrides with --resume.
func TestTrainConfigProblems(t *testing.T) {
	f := filepath.Join("..", "..", "config", "testdata", "configs", "several", "three-mistakes.toml")
	code, _, stderr := runCLI("train", f, "--set", "eval.intervall=3")
	if code != 1 || !strings.Contains(stderr, `--set eval.intervall=3: key "eval.intervall": unknown key in [eval]; did you mean "interval"?`) {
		t.Errorf("bad override: exit %d\n%s", code, stderr)
	}
	code, _, stderr = runCLI("train", f, "--batch-size", "3")
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if code != 1 || len(lines) != 4 || !strings.Contains(lines[0], "--batch-size 3: batch_size = 3: must be a positive multiple") ||
		!strings.Contains(stderr, `key "model" is missing`) || !strings.Contains(stderr, "top_p = 1.5") || !strings.Contains(stderr, "unknown environment") {
		t.Errorf("four problems: exit %d\n%s", code, stderr)
	}
	code, _, stderr = runCLI("train", "--resume", t.TempDir(), "--max-steps", "5")
	if code != 2 || !strings.Contains(stderr, "--max-steps 5: overrides go with a config file") {
		t.Errorf("--resume with an override: exit %d %s", code, stderr)
	}
}
