package main

import (
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/internal/tinymodel"
)

// withOSStderr runs f with os.Stderr (where progress and warnings go)
// redirected, and returns what f wrote there.
func withOSStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); done <- b }()
	defer func() { os.Stderr = saved }()
	f()
	w.Close()
	return string(<-done)
}

func tinyModelDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "model")
	if err := tinymodel.Write(dir, filepath.Join("..", "..", "testdata", "models", "qwen3-tiny")); err != nil {
		t.Fatal(err)
	}
	return dir
}

type resultRow struct {
	Env          string `json:"env"`
	ExampleID    string `json:"example_id"`
	ExampleIndex int    `json:"example_index"`
	Rollout      int    `json:"rollout"`
	Prompt       []struct {
		Role, Content string
	} `json:"prompt"`
	Completion []struct {
		Role, Content string
	} `json:"completion"`
	Answer       string             `json:"answer"`
	Reward       *float64           `json:"reward"`
	Metrics      map[string]float64 `json:"metrics"`
	Errors       []string           `json:"errors"`
	FinishReason string             `json:"finish_reason"`
	Turns        int                `json:"turns"`
}

func readRows(t *testing.T, path string) []resultRow {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []resultRow
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r resultRow
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		rows = append(rows, r)
	}
	return rows
}

// tableRow finds env's row in the printed table and returns its columns.
func tableRow(t *testing.T, out, env string) []string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 8 && f[0] == env {
			return f
		}
	}
	t.Fatalf("no table row for %s in:\n%s", env, out)
	return nil
}

// TestEvalCommand runs one env end to end and checks the printed numbers
// against a recount from the results file.
func TestEvalCommand(t *testing.T) {
	model := tinyModelDir(t)
	out := filepath.Join(t.TempDir(), "res", "r.jsonl")
	var code int
	var stdout, stderr string
	progress := withOSStderr(t, func() {
		code, stdout, stderr = runCLI("eval", "reverse-text", "-m", model, "-n", "3", "-r", "2", "--max-tokens", "5",
			"--args", `{"num_eval_examples": 4, "dataset_name": "synthetic"}`, "--output", out, "--batch", "4", "--pass-threshold", "0.01")
	})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows := readRows(t, out)
	if len(rows) != 6 {
		t.Fatalf("%d rows, want 3 examples × 2 rollouts", len(rows))
	}
	var sum float64
	solved := map[int]int{}
	for i, r := range rows {
		if r.Env != "reverse-text" || r.ExampleIndex != i/2 || r.Rollout != i%2 || r.Reward == nil || r.Answer == "" ||
			len(r.Prompt) != 2 || r.Prompt[0].Role != "system" || len(r.Completion) != 1 || r.Completion[0].Role != "assistant" ||
			r.FinishReason == "" || r.Turns != 1 || r.Metrics == nil || r.Errors == nil {
			t.Errorf("row %d: %+v", i, r)
			continue
		}
		sum += *r.Reward
		if *r.Reward >= 0.01 {
			solved[r.ExampleIndex]++
		}
	}
	var pass1 float64
	for _, n := range solved {
		pass1 += float64(n) / 2
	}
	f := tableRow(t, stdout, "reverse-text")
	want := []float64{3, 2, 6, sum / 6, pass1 / 3, float64(len(solved)) / 3, 0}
	for i, w := range want {
		got, err := strconv.ParseFloat(f[i+1], 64)
		if err != nil || math.Abs(got-w) > 5e-5 {
			t.Errorf("column %d = %s, want %.4f\n%s", i+1, f[i+1], w, stdout)
		}
	}
	if !strings.Contains(stdout, "overall mean reward "+strconv.FormatFloat(sum/6, 'f', 4, 64)+" over 6 rollouts") || !strings.Contains(stdout, "results: "+out) {
		t.Errorf("summary:\n%s", stdout)
	}
	if !strings.Contains(progress, "eval reverse-text: 6 rollouts (2 per example)") {
		t.Errorf("progress: %s", progress)
	}
}

// TestEvalConfigCommand runs an eval config with two environments, a
// command-line default and an ignored Prime key.
func TestEvalConfigCommand(t *testing.T) {
	model := tinyModelDir(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "multi.toml")
	os.WriteFile(cfg, []byte(`max_tokens = 4
rollouts_per_example = 1
max_concurrent = 8

[[eval]]
id = "reverse-text"
args = { num_eval_examples = 3, dataset_name = "synthetic" }
num_examples = 2

[[eval]]
env_id = "alphabet-sort"
args = { dataset_name = "synthetic" }
name = "sort"
rollouts_per_example = 2
num_examples = 1
`), 0o644)
	t.Chdir(dir)
	var code int
	var stdout, stderr string
	progress := withOSStderr(t, func() { code, stdout, stderr = runCLI("eval", cfg, "-m", model, "-r", "3") })
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// The block's rollouts_per_example wins over -r, -r over the top level.
	if f := tableRow(t, stdout, "reverse-text"); f[2] != "3" || f[3] != "6" {
		t.Errorf("reverse-text row %v", f)
	}
	if f := tableRow(t, stdout, "sort"); f[2] != "2" || f[3] != "2" {
		t.Errorf("sort row %v", f)
	}
	if !strings.Contains(progress, "warning: max_concurrent: accepted and ignored") {
		t.Errorf("stderr: %s", progress)
	}
	m := regexp.MustCompile(`results: (eval-multi-\d{8}-\d{6}\.jsonl)`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no default results path in:\n%s", stdout)
	}
	rows := readRows(t, filepath.Join(dir, m[1]))
	if len(rows) != 8 || rows[0].Env != "reverse-text" || rows[7].Env != "sort" {
		t.Errorf("%d rows", len(rows))
	}
}

// TestEvalBadInput: one line on stderr naming the problem, exit ≠ 0.
func TestEvalBadInput(t *testing.T) {
	model := tinyModelDir(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[[eval]]\nid = \"reverse-text\"\nnum_exampels = 2\n"), 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"eval", "no-such-env", "-m", model}, `env "no-such-env" not found`},
		{[]string{"eval", "reverse-text", "-m", model, "--args", "{bad"}, "is not a JSON object"},
		{[]string{"eval", "reverse-text", "-m", model, "--args", `{"num_eval_exampels": 3}`}, "num_eval_exampels"},
		{[]string{"eval", "reverse-text"}, "has no model"},
		{[]string{"eval", "reverse-text", "-m", filepath.Join(dir, "missing-model")}, "missing-model"},
		{[]string{"eval", "reverse-text", "-m", model, "-r", "0"}, "-r 0"},
		{[]string{"eval", "reverse-text", "-m", model, "-n", "x"}, `"x" is not an integer`},
		{[]string{"eval", bad, "-m", model}, `bad.toml:3:1: key "eval[0].num_exampels"`},
		{[]string{"eval", filepath.Join(dir, "none.toml"), "-m", model}, "none.toml"},
		{[]string{"eval", bad, "--args", "{}"}, "--args applies to one environment id"},
		{[]string{"eval"}, "give one environment id"},
	}
	for _, c := range cases {
		code, _, stderr := runCLI(c.args...)
		if code == 0 || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want one line with %q", c.args[1:], code, stderr, c.want)
		}
	}
}
