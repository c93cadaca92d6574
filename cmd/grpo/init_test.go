package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	for _, want := range []string{"configs/endpoints.toml", "configs/rl/gsm8k.toml", "configs/rl/wiki-search.toml", "configs/eval/multi-env.toml",
		"configs/gepa/base.toml", "configs/gepa/wordle.toml", "environments/AGENTS.md", "environments/capitals/environment.toml", "AGENTS.md"} {
		if !strings.Contains(out, "wrote "+filepath.Join(dir, filepath.FromSlash(want))) {
			t.Errorf("init output lacks %s:\n%s", want, out)
		}
	}
	model := tinyModelDir(t) // before the chdir: it reads ../../testdata
	cacheGSM8K(t)            // minimal.toml evaluates gsm8k, as Lab's does
	t.Chdir(dir)
	var show bytes.Buffer // env prints to os.Stdout, not runMain's writer
	if err := runEnv(&show, []string{"show", "capitals"}); err != nil || !strings.Contains(show.String(), "train 16 examples") || !strings.Contains(show.String(), "What is the capital of") {
		t.Errorf("env show capitals: %v\n%s", err, show.String())
	}
	// The eval config and the example environment run as written (with
	// the tiny model in place of the config's, and gsm8k's test split from
	// the HF cache, offline).
	withOSStderr(t, func() {
		code, out, stderr = runCLI("eval", "configs/eval/minimal.toml", "-m", model, "-n", "1", "-r", "1", "--max-tokens", "3", "--output", "min.jsonl")
	})
	if code != 0 || !strings.Contains(out, "gsm8k") {
		t.Errorf("eval minimal.toml: exit %d %s\n%s", code, stderr, out)
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
}

// cacheGSM8K puts a slice of openai/gsm8k's test split into a fresh HF
// cache, laid out as huggingface_hub leaves it, and turns offline mode on:
// the builtin reads the Lab's dataset from the cache without a network.
func cacheGSM8K(t *testing.T) {
	t.Helper()
	const sha = "0123456789abcdef0123456789abcdef01234567"
	cache := t.TempDir()
	root := filepath.Join(cache, "datasets--openai--gsm8k")
	pq, err := os.ReadFile("../../testdata/gsm8k/sample.parquet")
	if err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(root, "snapshots", sha, "main")
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(snap, "test-00000-of-00001.parquet"), pq, 0o644)
	os.MkdirAll(filepath.Join(root, "refs"), 0o755)
	os.WriteFile(filepath.Join(root, "refs", "main"), []byte(sha), 0o644)
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_HUB_OFFLINE", "1")
}
