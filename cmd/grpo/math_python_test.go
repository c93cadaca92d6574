package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/estimate"
	"github.com/grpo-dev/grpo/internal/sandboxtest"
)

// competitionMath is two rows of the hub's chiayewken/competition_math,
// which math-python reads by default (the Lab's config sets no args).
const competitionMath = `{"problem": "What is $6 \\cdot 7$?", "level": "Level 1", "type": "Prealgebra", "solution": "$6 \\cdot 7 = \\boxed{42}$."}
{"problem": "Simplify $\\frac{2}{4}$.", "level": "Level 1", "type": "Algebra", "solution": "It is \\boxed{\\frac{1}{2}}."}
`

// fakeMathHub serves competition_math through the hub protocol and points
// this test's hub client (HF_ENDPOINT, an empty HF_HOME) at it.
func fakeMathHub(t *testing.T) {
	t.Helper()
	const repo, sha = "chiayewken/competition_math", "0123456789abcdef0123456789abcdef01234567"
	files := map[string][]byte{"data/train.jsonl": []byte(competitionMath), "data/test.jsonl": []byte(competitionMath)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/datasets/"+repo+"/revision/main" {
			var sib []map[string]string
			for name := range files {
				sib = append(sib, map[string]string{"rfilename": name})
			}
			json.NewEncoder(w).Encode(map[string]any{"sha": sha, "siblings": sib})
			return
		}
		name, ok := strings.CutPrefix(r.URL.Path, "/datasets/"+repo+"/resolve/")
		_, name, _ = strings.Cut(name, "/")
		body, found := files[name]
		if !ok || !found {
			w.Header().Set("X-Error-Code", "EntryNotFound")
			http.NotFound(w, r)
			return
		}
		sum := sha256.Sum256(body)
		w.Header().Set("X-Repo-Commit", sha)
		w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:])+`"`)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		if r.Method == http.MethodGet {
			w.Write(body)
		}
	}))
	t.Cleanup(srv.Close)
	home := t.TempDir()
	t.Setenv("HF_ENDPOINT", srv.URL)
	t.Setenv("HF_HOME", home)
	t.Setenv("HF_HUB_CACHE", filepath.Join(home, "hub"))
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_HUB_OFFLINE", "")
}

// TestLabMathPythonConfig is issue 15's bar for math-python: the Lab's
// configs/rl/math-python.toml (its own text, model swapped) passes grpo
// estimate — its KV cache sized for max_turns 100 × (max_tokens 1024 +
// the tool results' room) — and runs a training step, shrunk by flags.
func TestLabMathPythonConfig(t *testing.T) {
	sandboxtest.Require(t)
	fakeMathHub(t)
	model := qwen3ModelDir(t)
	cfg := labConfig(t, "math-python", model)
	t.Setenv(estimate.FakeMemAvailableEnv, "64G")
	code, out, errOut := runCaptured(t, "estimate", cfg, "--no-measure")
	if code != 0 {
		t.Fatalf("estimate: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "KV cache primeintellect/math-python") || !strings.Contains(out, "100 turns × max_tokens 1024 + 99 replies × 1024") {
		t.Errorf("estimate does not size math-python's turns and tool results:\n%s", out)
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
	for _, key := range []string{`"tool_calls":`, `"tool_errors":`, `"reward/correct_answer":`} {
		if !strings.Contains(string(metrics), key) {
			t.Errorf("step metrics lack %s: %s", key, metrics)
		}
	}
}

// TestEvalMathPython: grpo eval math-python runs end to end on the tiny
// model with Qwen3's tokenizer, on offline data (a random policy rarely
// calls python; package trainer's scripted episode shows one scoring 1).
func TestEvalMathPython(t *testing.T) {
	sandboxtest.Require(t)
	model := qwen3ModelDir(t)
	out := filepath.Join(t.TempDir(), "mp.jsonl")
	var code int
	var stdout, stderr string
	withOSStderr(t, func() {
		code, stdout, stderr = runCLI("eval", "math-python", "-m", model, "--args", `{"dataset_name": "synthetic", "pip_install_packages": ""}`,
			"-n", "2", "-r", "2", "--max-tokens", "6", "--output", out)
	})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows := readRows(t, out)
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 2 × 2", len(rows))
	}
	for i, r := range rows {
		if r.Env != "math-python" || r.Reward == nil || r.Answer == "" || len(r.Prompt) != 2 || r.Turns < 1 ||
			!strings.HasPrefix(r.Prompt[0].Content, "Use Python for all calculations.") {
			t.Errorf("row %d: %+v", i, r)
		}
		if _, ok := r.Metrics["tool_calls"]; !ok {
			t.Errorf("row %d has no tool_calls metric: %v", i, r.Metrics)
		}
	}
	if !strings.Contains(stdout, "math-python") {
		t.Errorf("table:\n%s", stdout)
	}
}
