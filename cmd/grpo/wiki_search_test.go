package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/estimate"
	"github.com/grpo-dev/grpo/internal/tinymodel"
)

// qwen3ModelDir is a tiny random Qwen3 with Qwen3's real tokenizer and
// chat template, which renders tools (tinymodel.WriteQwen3).
func qwen3ModelDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "qwen3-tok")
	if err := tinymodel.WriteQwen3(dir, filepath.Join("..", "..", "testdata", "tokenizer", "qwen3"), 4096); err != nil {
		t.Fatal(err)
	}
	return dir
}

// labConfig is the Lab's configs/rl/<name>.toml, its own text, with its
// model swapped for model.
func labConfig(t *testing.T, name, model string) string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", "lab", name+".toml"))
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := strings.Cut(string(text), "\n")
	if !strings.HasPrefix(first, "model = ") {
		t.Fatalf("%s.toml does not start with its model line: %q", name, first)
	}
	path := filepath.Join(t.TempDir(), name+".toml")
	if err := os.WriteFile(path, []byte("model = "+`"`+model+`"`+"\n"+rest), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLabWikiSearchConfig is issue 15's bar for wiki-search: the Lab's
// configs/rl/wiki-search.toml passes grpo estimate — its KV cache sized
// for max_turns 10 × (max_tokens 512 + the tool results' room) — and runs
// a training step (shrunk by flags: the config's batch is for a cluster).
func TestLabWikiSearchConfig(t *testing.T) {
	model := qwen3ModelDir(t)
	cfg := labConfig(t, "wiki-search", model)
	t.Setenv(estimate.FakeMemAvailableEnv, "64G")
	code, out, errOut := runCaptured(t, "estimate", cfg, "--no-measure")
	if code != 0 {
		t.Fatalf("estimate: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "KV cache primeintellect/wiki-search") || !strings.Contains(out, "10 turns × max_tokens 512 + 9 replies × 1024") {
		t.Errorf("estimate does not size wiki-search's turns and tool results:\n%s", out)
	}
	run := filepath.Join(t.TempDir(), "run")
	var stderr string
	withOSStderr(t, func() {
		code, _, stderr = runCLI("train", cfg, "--output", run, "--max-steps", "1", "--set", "batch_size=2",
			"--set", "rollouts_per_example=2", "--set", "sampling.max_tokens=8", "--seed", "3")
	})
	if code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	metrics, err := os.ReadFile(filepath.Join(run, "metrics.jsonl"))
	if err != nil || strings.Count(string(metrics), "\n") != 1 {
		t.Fatalf("metrics.jsonl after one step: %q, %v", metrics, err)
	}
	for _, key := range []string{`"tool_calls":`, `"tool_errors":`, `"tool_calls/wiki_search_pages":`, `"reward/exact_match":`} {
		if !strings.Contains(string(metrics), key) {
			t.Errorf("step metrics lack %s: %s", key, metrics)
		}
	}
}

// TestEvalWikiSearch: grpo eval wiki-search runs end to end on the tiny
// model with Qwen3's tokenizer (a random policy rarely calls a tool; the
// scripted episode in package trainer shows a full one scoring 1).
func TestEvalWikiSearch(t *testing.T) {
	model := qwen3ModelDir(t)
	out := filepath.Join(t.TempDir(), "wiki.jsonl")
	var code int
	var stdout, stderr string
	withOSStderr(t, func() {
		code, stdout, stderr = runCLI("eval", "wiki-search", "-m", model, "-n", "2", "-r", "2", "--max-tokens", "6", "--output", out)
	})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows := readRows(t, out)
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 2 × 2", len(rows))
	}
	for i, r := range rows {
		if r.Env != "wiki-search" || r.Reward == nil || r.Answer == "" || len(r.Prompt) != 1 || r.Turns < 1 {
			t.Errorf("row %d: %+v", i, r)
		}
		if _, ok := r.Metrics["tool_calls"]; !ok {
			t.Errorf("row %d has no tool_calls metric: %v", i, r.Metrics)
		}
	}
	if !strings.Contains(stdout, "wiki-search") {
		t.Errorf("table:\n%s", stdout)
	}
}

// grpo env show lists a tool environment's tools with the first line of
// each schema's description, and its max_turns.
func TestEnvShowTools(t *testing.T) {
	code, out, errOut := runCaptured(t, "env", "show", "wiki-search@v0", "--args", `{"max_turns": 6}`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Tools (max_turns 6):", "search_pages   Search for top 10 relevant articles using title embedding similarity.",
		"view_sections  View the sections of a page.", "read_section   Read a section of a page.", "30 examples"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, out, _ := runCaptured(t, "env", "show", "reverse-text"); code != 0 || strings.Contains(out, "Tools") {
		t.Errorf("an environment without tools lists tools: exit %d\n%s", code, out)
	}
}
