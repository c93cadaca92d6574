package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnvCommand(t *testing.T) {
	t.Setenv("GRPO_HOME", t.TempDir())
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "environment.toml"), []byte(`id = "cli-test"
prompt_template = "Echo {question}"
[dataset]
train = "train.jsonl"
[[rubric]]
type = "exact"
`), 0o644)
	os.WriteFile(filepath.Join(src, "train.jsonl"), []byte(`{"question": "hi", "answer": "hi"}`+"\n"), 0o644)
	var out bytes.Buffer
	if err := runEnv(&out, []string{"install", src}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := runEnv(&out, []string{"list"}); err != nil || !strings.Contains(out.String(), "cli-test") || !strings.Contains(out.String(), "reverse-text") {
		t.Errorf("list: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := runEnv(&out, []string{"show", "cli-test"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"num_train_examples  int", "train 1 examples", "eval  none", "Echo hi"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show lacks %q:\n%s", want, out.String())
		}
	}
	// wordle says that its reward is verifiers' scaled into [0, 1].
	out.Reset()
	if err := envShow(&out, "wordle", map[string]any{"num_train_examples": 1, "num_eval_examples": 1}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"verifiers 8d4b33247", "v1: verifiers a60a606 taskset, the default\n", "v0: verifiers 8d4b33247; Hub 0.1.7; reward = verifiers' × 1/2.2", "[GAME] You are Playing Wordle."} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show wordle lacks %q:\n%s", want, out.String())
		}
	}
	if err := runEnv(&out, []string{"show", "nope-env"}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("show unknown: %v", err)
	}
	if err := runEnv(&out, []string{"frobnicate"}); err == nil {
		t.Error("unknown subcommand accepted")
	}
}
