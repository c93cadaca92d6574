package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/gepa"
	"github.com/grpo-dev/grpo/internal/tinymodel"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/serve"
	"github.com/grpo-dev/grpo/tokenizer"
)

// TestGEPARunOnServe runs grpo gepa run end to end against grpo serve
// (the serve package over the tiny model, in process) as both student and
// teacher through endpoints.toml: every student rollout and every
// reflection is a chat request the server finishes, the calls counted are
// the student's requests exactly, and the outputs are written. The tiny
// model's context is raised to 4096 positions (RoPE has no table to
// outgrow) so a reflection prompt fits.
func TestGEPARunOnServe(t *testing.T) {
	dir := longTinyModelDir(t)
	m, err := model.Load(dir, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(m, tok, serve.Config{ModelName: "tiny", Slots: 4, MaxLen: 4096})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	hs := httptest.NewServer(srv.Handler())
	defer func() { hs.Close(); cancel(); <-done }()

	work := t.TempDir()
	envDir := filepath.Join(work, "env")
	if err := tinymodel.WriteReverseEnv(envDir, 4); err != nil {
		t.Fatal(err)
	}
	reg := "[[endpoint]]\nendpoint_id = \"student\"\nmodel = \"tiny\"\nurl = \"" + hs.URL + "/v1\"\nkey = \"\"\n\n" +
		"[[endpoint]]\nendpoint_id = \"teacher\"\nmodel = \"tiny\"\nurl = \"" + hs.URL + "/v1\"\nkey = \"\"\n"
	os.WriteFile(filepath.Join(work, "endpoints.toml"), []byte(reg), 0o644)
	// Seed validation 2 calls, then iterations of at most 2+2+2: two fit
	// in 14.
	cfg := filepath.Join(work, "gepa.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`model = "student"
reflection_model = "teacher"
endpoints_path = "endpoints.toml"
env_id = %q

[gepa]
max_calls = 14
num_train = 4
num_val = 2
minibatch_size = 2
max_concurrent = 2
seed = 1

[execution]
sampling_args = { max_tokens = 4, temperature = 1.0 }
`, envDir)), 0o644)
	out := filepath.Join(work, "run")
	code, stdout, stderr := runCLIQuiet(t, "gepa", "run", cfg, "--output", out, "--teacher-max-tokens", "16", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	for _, f := range []string{gepa.PromptFile, gepa.ResultsFile, gepa.FrontierFile, gepa.MetadataFile, gepa.PlotFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	data, _ := os.ReadFile(filepath.Join(out, gepa.ResultsFile))
	rows := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	reflections, last := 0, gepa.Record{}
	for _, r := range rows {
		var rec gepa.Record
		if err := json.Unmarshal(r, &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Kind == "reflect" {
			reflections++
		}
		last = rec
	}
	if len(rows) != 3 || last.Calls > 14 || reflections != 2 {
		t.Fatalf("results.jsonl: %d rows, %d reflections, %d calls; want 3 rows (seed + 2), 2, ≤ 14:\n%s", len(rows), reflections, last.Calls, data)
	}
	st := srv.Stats()
	if st.Finished != last.Calls+reflections || st.Failed != 0 {
		t.Errorf("the server finished %d requests (%d failed), want %d student rollouts + %d reflections", st.Finished, st.Failed, last.Calls, reflections)
	}
	if !strings.Contains(stdout, "iterations 2, ") {
		t.Errorf("stdout: %s", stdout)
	}
}

// longTinyModelDir is the tiny model with its context raised to 4096
// positions, room for a reflection prompt.
func longTinyModelDir(t *testing.T) string {
	dir := tinyModelDir(t)
	cfgPath := filepath.Join(dir, "config.json")
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var mc map[string]any
	json.Unmarshal(raw, &mc)
	mc["max_position_embeddings"] = 4096
	raw, _ = json.Marshal(mc)
	if err := os.WriteFile(cfgPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestGEPARunLocalModel: student (with a PEFT adapter) and teacher (the
// same base model, shared) both the tiny model loaded in process, no
// endpoints: the run plays every rollout and reflection through the
// sampler and writes its files; a missing adapter and a train run's
// directory are refused.
func TestGEPARunLocalModel(t *testing.T) {
	dir := longTinyModelDir(t)
	work := t.TempDir()
	envDir := filepath.Join(work, "env")
	if err := tinymodel.WriteReverseEnv(envDir, 4); err != nil {
		t.Fatal(err)
	}
	adapter, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "lora", "ours")) // an adapter of qwen3-tiny
	cfg := filepath.Join(work, "gepa.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`model = %q
adapter = %q
reflection_model = %q
env_id = %q

[gepa]
max_calls = 8
num_train = 4
num_val = 2
minibatch_size = 2

[sampling]
max_tokens = 4
`, dir, adapter, dir, envDir)), 0o644)
	out := filepath.Join(work, "run")
	code, stdout, stderr := runCLIQuiet(t, "gepa", "run", cfg, "--output", out, "--teacher-max-tokens", "8", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	data, _ := os.ReadFile(filepath.Join(out, gepa.ResultsFile))
	if n := bytes.Count(data, []byte("\n")); n != 2 || !strings.Contains(stdout, "iterations 1, ") {
		t.Errorf("results.jsonl has %d rows, want 2 (seed + 1 iteration):\n%s\n%s", n, data, stdout)
	}
	meta, _ := os.ReadFile(filepath.Join(out, gepa.MetadataFile))
	if !strings.Contains(string(meta), `"adapter": "`+adapter) {
		t.Errorf("metadata.json does not record the adapter:\n%s", meta)
	}
	bad := filepath.Join(work, "bad.toml")
	text, _ := os.ReadFile(cfg)
	os.WriteFile(bad, []byte(strings.Replace(string(text), adapter, filepath.Join(work, "no-adapter"), 1)), 0o644)
	if code, _, stderr := runCLIQuiet(t, "gepa", "run", bad, "--output", filepath.Join(work, "run2")); code == 0 || !strings.Contains(stderr, "adapter = ") {
		t.Errorf("a missing adapter: exit %d, %s", code, stderr)
	}
	train := filepath.Join(work, "trainrun")
	os.MkdirAll(train, 0o755)
	os.WriteFile(filepath.Join(train, "metrics.jsonl"), []byte("{}\n"), 0o644)
	if code, _, stderr := runCLIQuiet(t, "gepa", "run", cfg, "--output", train); code == 0 || !strings.Contains(stderr, "holds a grpo train run") {
		t.Errorf("a train run's directory: exit %d, %s", code, stderr)
	}
}
