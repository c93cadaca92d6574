package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// TestInitCommand: init writes the workspace and lists it, grpo env show
// accepts the example environment from inside the workspace, and a second
// init refuses without --force. (workspace's TestWorkspace parses and
// validates every config.)
func TestInitCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lab")
	code, out, stderr := runCLI("init", dir)
	if code != 0 {
		t.Fatalf("init: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"configs/endpoints.toml", "configs/rl/qwen.toml", "configs/rl/nemotron.toml", "configs/eval/llama-3.toml",
		"configs/gepa/gpt-oss.toml", "environments/AGENTS.md", "environments/capitals/environment.toml", "AGENTS.md", "CLAUDE.md",
		"AGENTS.local.md", ".prime/skills/brainstorm/SKILL.md", ".gitignore"} {
		if !strings.Contains(out, "wrote "+filepath.Join(dir, filepath.FromSlash(want))) {
			t.Errorf("init output lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "configs/rl/gsm8k.toml") {
		t.Errorf("the legacy configs were written without --legacy-configs:\n%s", out)
	}
	model := tinyModelDir(t) // before the chdir: it reads ../../testdata
	cacheReverseText(t)      // llama-3.toml evaluates reverse-text, as Lab's does
	t.Chdir(dir)
	var show bytes.Buffer // env prints to os.Stdout, not runMain's writer
	if err := runEnv(&show, []string{"show", "capitals"}); err != nil || !strings.Contains(show.String(), "train 16 examples") || !strings.Contains(show.String(), "What is the capital of") {
		t.Errorf("env show capitals: %v\n%s", err, show.String())
	}
	// The eval config and the example environment run as written (with
	// the tiny model in place of the config's, and gsm8k's test split from
	// the HF cache, offline).
	// Lab's eval layout ([[eval]] env_id, top-level num_examples and
	// max_tokens) runs as written, the model aside.
	withOSStderr(t, func() {
		code, out, stderr = runCLI("eval", "configs/eval/llama-3.toml", "-m", model, "-n", "1", "--max-tokens", "3", "--output", "llama.jsonl")
	})
	if code != 0 || !strings.Contains(out, "primeintellect/reverse-text") {
		t.Errorf("eval llama-3.toml: exit %d %s\n%s", code, stderr, out)
	}
	// Lab's rl file trains as written, the model and sizes aside.
	withOSStderr(t, func() {
		code, out, stderr = runCLI("train", "configs/rl/llama.toml", "--set", "model="+model, "--max-steps", "1", "--batch-size", "4",
			"--set", "rollouts_per_example=2", "--set", "sampling.max_tokens=4", "--output", "runs/llama")
	})
	if _, err := os.Stat("runs/llama/adapter/adapter_config.json"); code != 0 || err != nil {
		t.Errorf("train llama.toml: exit %d %v %s\n%s", code, err, stderr, out)
	}
	// Nemotron-3 is read as any family (no longer refused by name):
	// offline, its uncached config.json is what stops it, in one line.
	withOSStderr(t, func() { code, out, stderr = runCLI("eval", "configs/eval/nemotron-3.toml") })
	if code == 0 || !strings.Contains(stderr, `NVIDIA-Nemotron-3-Nano-30B-A3B-BF16: config.json: not in the cache`) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
		t.Errorf("eval nemotron-3.toml: exit %d %q", code, stderr)
	}
	// A Hub environment of the configs that needs containers: uncommented,
	// it fails before any model loads, in one line naming what is missing.
	llama, _ := os.ReadFile("configs/eval/llama-3.toml")
	flights := strings.Replace(string(llama), "# [[eval]]\n# env_id = \"primeintellect/dspy-flights\"", "[[eval]]\nenv_id = \"primeintellect/dspy-flights\"", 1)
	os.WriteFile("flights.toml", []byte(flights), 0o644)
	withOSStderr(t, func() { code, out, stderr = runCLI("eval", "flights.toml", "-m", model) })
	if flights == string(llama) || code == 0 || !strings.Contains(stderr, "env primeintellect/dspy-flights cannot run on this machine: it needs a container sandbox") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
		t.Errorf("eval with dspy-flights: exit %d %q", code, stderr)
	}
	withOSStderr(t, func() { code, out, stderr = runCLI("gepa", "run", "configs/gepa/nemotron-3.toml", "--quiet") })
	if code == 0 || !strings.Contains(stderr, `config.json: not in the cache`) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
		t.Errorf("gepa run nemotron-3.toml: exit %d %q", code, stderr)
	}
	code, _, stderr = runCLI("estimate", "configs/rl/nemotron.toml")
	if code == 0 || !strings.Contains(stderr, "nemotron-3-nano-30b-a3b") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
		t.Errorf("estimate nemotron.toml: exit %d %q", code, stderr)
	}
	withOSStderr(t, func() {
		code, out, stderr = runCLI("eval", "capitals", "-m", model, "-n", "-1", "-r", "1", "--max-tokens", "3", "--output", "cap.jsonl")
	})
	if f := tableRow(t, out, "capitals"); code != 0 || f[1] != "6" {
		t.Errorf("eval capitals: exit %d %s\n%s", code, stderr, out)
	}
	code, _, stderr = runCLI("init")
	if code == 0 || !strings.Contains(stderr, "--force") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
		t.Errorf("second init: exit %d %q", code, stderr)
	}
	os.WriteFile("AGENTS.md", []byte("edited"), 0o644)
	if code, _, stderr = runCLI("init", "--force"); code != 0 {
		t.Errorf("init --force: exit %d %s", code, stderr)
	}
	if b, _ := os.ReadFile("AGENTS.md"); string(b) == "edited" {
		t.Error("--force did not rewrite AGENTS.md")
	}
	if code, _, stderr = runCLI("init", "a", "b"); code != 2 {
		t.Errorf("two dirs: exit %d %s", code, stderr)
	}
	// --legacy-configs adds the per-environment configs; the rest exist,
	// so only --force writes.
	if code, out, stderr = runCLI("init", "--legacy-configs", "--force"); code != 0 || !strings.Contains(out, "wrote "+filepath.Join("configs", "rl", "gsm8k.toml")) {
		t.Errorf("init --legacy-configs: exit %d %s\n%s", code, stderr, out)
	}
}

// cacheReverseText puts 104 rows of PrimeIntellect/Reverse-Text-RL's
// train split into a fresh HF cache (cacheHubFile), offline.
func cacheReverseText(t *testing.T) {
	t.Helper()
	type row struct {
		Prompt string `parquet:"prompt"`
	}
	// Enough rows for reverse-text's 100 eval rows (the last ones) and a
	// few to train on.
	var rows []row
	for i := range 104 {
		rows = append(rows, row{fmt.Sprintf("sentence %d to reverse", i)})
	}
	var b bytes.Buffer
	if err := parquet.Write(&b, rows); err != nil {
		t.Fatal(err)
	}
	cacheHubFile(t, "datasets--PrimeIntellect--Reverse-Text-RL", "data/train-00000-of-00001.parquet", b.Bytes())
}

// cacheHubFile puts one file of a hub repo (cache dir name such as
// "datasets--org--name") into a fresh HF cache, laid out as
// huggingface_hub leaves it, and turns offline mode on: builtins read the
// Lab's datasets from the cache without a network.
func cacheHubFile(t *testing.T, repo, file string, data []byte) {
	t.Helper()
	const sha = "0123456789abcdef0123456789abcdef01234567"
	cache := t.TempDir()
	root := filepath.Join(cache, repo)
	p := filepath.Join(root, "snapshots", sha, filepath.FromSlash(file))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p, data, 0o644)
	os.MkdirAll(filepath.Join(root, "refs"), 0o755)
	os.WriteFile(filepath.Join(root, "refs", "main"), []byte(sha), 0o644)
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_HUB_OFFLINE", "1")
}
