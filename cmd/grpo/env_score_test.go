package main

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goldenFile holds completions with the rewards verifiers 8d4b33247's own
// code gave them (env/testdata/reference/verifiers_golden.py).
const goldenFile = "../../env/testdata/verifiers_golden.jsonl"

// TestEnvScoreGolden is the Bar: `grpo env score ENV --input` on the golden
// file prints, for each of the five builtins, verifiers' reward for every
// row of that env (verifiers_reward; reward is it × the env's scale) and
// verifiers' sub-metrics.
func TestEnvScoreGolden(t *testing.T) {
	type golden struct {
		Env     string             `json:"env"`
		Name    string             `json:"name"`
		Reward  float64            `json:"reward"`
		Metrics map[string]float64 `json:"metrics"`
	}
	f, err := os.Open(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byLine := map[int]golden{}
	perEnv := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		var g golden
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
			t.Fatal(err)
		}
		byLine[line] = g
		perEnv[g.Env]++
	}
	scales := map[string]float64{"wordle": 1 / 2.2}
	for _, id := range []string{"reverse-text", "gsm8k", "math", "wordle", "alphabet-sort"} {
		code, out, stderr := runCLI("env", "score", id, "--input", goldenFile)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", id, code, stderr)
		}
		printed := 0
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			var r struct {
				Line            int                `json:"line"`
				Reward          float64            `json:"reward"`
				VerifiersReward float64            `json:"verifiers_reward"`
				Metrics         map[string]float64 `json:"metrics"`
			}
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatalf("%s: output line %q: %v", id, l, err)
			}
			g, ok := byLine[r.Line]
			if !ok || g.Env != id {
				t.Errorf("%s: printed line %d, a row of %q", id, r.Line, g.Env)
				continue
			}
			printed++
			scale := scales[id]
			if scale == 0 {
				scale = 1
			}
			if math.Abs(r.VerifiersReward-g.Reward) > 1e-9 || math.Abs(r.Reward-g.Reward*scale) > 1e-9 {
				t.Errorf("%s/%s: printed reward %v, verifiers_reward %v; verifiers gave %v", id, g.Name, r.Reward, r.VerifiersReward, g.Reward)
			}
			for k, want := range g.Metrics {
				if got, ok := r.Metrics[k]; !ok || math.Abs(got-want) > 1e-9 {
					t.Errorf("%s/%s: %s = %v, verifiers %v", id, g.Name, k, got, want)
				}
			}
		}
		if printed != perEnv[id] || printed < 5 {
			t.Errorf("%s: printed %d rows, the golden file has %d", id, printed, perEnv[id])
		}
	}
}

// TestEnvScoreSimple: the simple row layout, --args, scripted wordle turns
// played through the game, and bad input as one line naming file:line.
func TestEnvScoreSimple(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "c.jsonl")
	os.WriteFile(in, []byte(`{"completion": "<reversed_text>olleh</reversed_text>", "answer": "olleh"}

{"completion": "<reversed_text>oleh</reversed_text>", "answer": "olleh", "name": "partial"}
`), 0o644)
	code, out, stderr := runCLI("env", "score", "reverse-text", "--input", in, "--args", `{"dataset_name": "synthetic"}`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.Contains(lines[0], `"line":1,`) || !strings.Contains(lines[0], `"reward":1,`) ||
		!strings.Contains(lines[1], `"line":3,"name":"partial"`) {
		t.Fatalf("exit %d %s\n%s", code, stderr, out)
	}
	// An integer in a row's args is an int arg (the input is read with
	// json.Number, which once failed the whole file as "must be int, got
	// string").
	os.WriteFile(in, []byte(`{"completion": "<reversed_text>olleh</reversed_text>", "answer": "olleh", "args": {"dataset_name": "synthetic", "num_eval_examples": 5, "seed": 3}}`+"\n"), 0o644)
	if code, out, stderr = runCLI("env", "score", "reverse-text", "--input", in); code != 0 || !strings.Contains(out, `"reward":1,`) {
		t.Errorf("integer row args: exit %d %s\n%s", code, stderr, out)
	}
	os.WriteFile(in, []byte(`{"completion": ["<guess>[plant]</guess>", "<guess>[crane]</guess>"], "answer": "crane", "version": "v0"}`+"\n"), 0o644)
	code, out, stderr = runCLI("env", "score", "wordle", "--input", in)
	var r struct {
		VerifiersReward float64 `json:"verifiers_reward"`
		Played          bool    `json:"played"`
		Turns           int     `json:"turns"`
		Completion      []struct{ Role, Content string }
	}
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || !r.Played || r.Turns != 2 || len(r.Completion) != 4 || math.Abs(r.VerifiersReward-1.7) > 1e-9 {
		t.Errorf("wordle scripted: exit %d %s %v\n%s", code, stderr, err, out)
	}
	os.WriteFile(in, []byte("{\"completion\": \"x\"}\n{\"answer\": 1}\n"), 0o644)
	code, _, stderr = runCLI("env", "score", "gsm8k", "--input", in)
	if code != 1 || !strings.Contains(stderr, in+":2: no \"completion\"") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
		t.Errorf("bad row: exit %d %q", code, stderr)
	}
	if code, _, stderr = runCLI("env", "score", "gsm8k"); code != 2 || !strings.Contains(stderr, "--input") {
		t.Errorf("no --input: exit %d %q", code, stderr)
	}
}
