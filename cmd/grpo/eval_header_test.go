package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/config"
)

// TestEvalHeaderNamesAdapter: the line that starts an eval names the
// adapter with the model, so a trained adapter's eval does not read as
// the base model's (issue 27).
func TestEvalHeaderNamesAdapter(t *testing.T) {
	var buf bytes.Buffer
	p := &evalProgress{w: &buf}
	p.start(config.EvalSpec{Name: "gsm8k", Model: "Qwen/Qwen3-0.6B", Adapter: "runs/gsm8k-1/adapter", RolloutsPerExample: 2}, 10)
	p.start(config.EvalSpec{Name: "gsm8k", Model: "Qwen/Qwen3-0.6B", RolloutsPerExample: 2}, 10)
	want := "eval gsm8k: 10 rollouts (2 per example) of Qwen/Qwen3-0.6B with adapter runs/gsm8k-1/adapter\n" +
		"eval gsm8k: 10 rollouts (2 per example) of Qwen/Qwen3-0.6B\n"
	if got := buf.String(); got != want {
		t.Errorf("header:\n%s\nwant:\n%s", got, want)
	}
	if s := evalSubject(config.EvalSpec{Model: "m", Adapter: "a"}); !strings.Contains(s, "adapter a") {
		t.Errorf("evalSubject %q", s)
	}
}
