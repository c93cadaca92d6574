package builtins_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/envtest"
	"github.com/grpo-dev/grpo/rubric"
)

// goldenCase is one line of a golden file (testdata/verifiers*_golden.jsonl):
// a completion for a builtin environment and what verifiers' own code
// computed for it: verifiers_golden.jsonl from 8d4b33247 (with
// math-verify 0.8.0 and TextArena's Wordle; see
// testdata/reference/verifiers_golden.py), the others from a60a606's v1
// tasksets, each from the script its header names. Version selects the
// builtin's behaviour the row was computed for ("" for the default). Source is "ran" for values
// computed by running that code and "read" for values derived by reading
// it.
type goldenCase struct {
	Env        string             `json:"env"`
	Version    string             `json:"version"`
	Name       string             `json:"name"`
	Args       map[string]any     `json:"args"`
	Prompt     []chat.Message     `json:"prompt"`
	Completion []chat.Message     `json:"completion"`
	Answer     string             `json:"answer"`
	Info       map[string]any     `json:"info"`
	Reward     float64            `json:"reward"`
	Metrics    map[string]float64 `json:"metrics"`
	Source     string             `json:"source"`
	// Replayed cases have replies from the reference game (wordle): the
	// assistant turns replayed through grpo's episode must get them too.
	Replayed bool `json:"replayed"`
	GameOver bool `json:"game_over"`
	// Kind marks rows that are not a scored completion, which
	// TestV1GamesGolden checks: "judge" (a completion scored through a
	// scripted judge), "tool" (a tool call's reply), "tasks" (the
	// taskset's examples).
	Kind         string            `json:"kind"`
	Tool         string            `json:"tool"`
	Arguments    map[string]string `json:"arguments"`
	ToolReply    string            `json:"tool_reply"`
	Description  string            `json:"description"`
	Tasks        []goldenTask      `json:"tasks"`
	JudgeReply   string            `json:"judge_reply"`
	JudgeCalled  bool              `json:"judge_called"`
	JudgeRequest map[string]any    `json:"judge_request"`
	JudgeError   string            `json:"judge_error"`
}

type goldenTask struct {
	Prompt, Question, Answer string
	SystemPrompt             *string `json:"system_prompt"`
}

// loadGoldenCases reads every golden file, which `grpo env score`'s tests
// reuse.
func loadGoldenCases(t *testing.T) []goldenCase {
	t.Helper()
	files, err := filepath.Glob("../testdata/verifiers*_golden.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	var cases []goldenCase
	for _, name := range files {
		cases = append(cases, loadGoldenFile(t, name)...)
	}
	return cases
}

func loadGoldenFile(t *testing.T, name string) []goldenCase {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []goldenCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c goldenCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s line %d: %v", name, len(cases)+1, err)
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

// TestRewardsMatchVerifiers scores every golden completion with grpo's
// builtin and compares each reward function's value (unscaled, under
// verifiers' name) and the reward (verifiers' weighted sum times the
// environment's documented RewardScale).
func TestRewardsMatchVerifiers(t *testing.T) {
	cases := loadGoldenCases(t)
	perEnv := map[string]int{}
	for _, c := range cases {
		if c.Kind != "" {
			continue
		}
		perEnv[c.Env]++
		if c.Source != "ran" && c.Source != "read" {
			t.Errorf("%s/%s: source %q, want ran or read", c.Env, c.Name, c.Source)
		}
		e, err := env.New(c.Env, c.Args, env.WithVersion(c.Version))
		if err != nil {
			t.Fatalf("%s/%s: %v", c.Env, c.Name, err)
		}
		res := e.Rubric().Score(context.Background(), rubric.Rollout{Prompt: c.Prompt, Completion: c.Completion, Answer: c.Answer, Info: c.Info})
		if len(res.Errors) > 0 {
			t.Errorf("%s/%s: %v", c.Env, c.Name, res.Errors)
		}
		terms := 0
		for k := range res.Metrics {
			if _, ok := c.Metrics[k]; ok {
				terms++
			}
		}
		if terms != len(c.Metrics) || len(res.Metrics) != len(c.Metrics) {
			t.Errorf("%s/%s: metrics %v, verifiers has %v", c.Env, c.Name, res.Metrics, c.Metrics)
		}
		for name, want := range c.Metrics {
			if got := res.Metrics[name]; !envtest.Near(got, want) {
				t.Errorf("%s/%s: %s = %v, verifiers %v", c.Env, c.Name, name, got, want)
			}
		}
		spec, _ := env.Lookup(c.Env)
		scale := spec.ScaleOf(c.Version)
		if scale == 0 {
			scale = 1
		}
		if want, _ := rubric.Clamp(c.Reward * scale); !envtest.Near(res.Reward, want) {
			t.Errorf("%s/%s: reward %v, verifiers %v × %v", c.Env, c.Name, res.Reward, c.Reward, scale)
		}
		if c.Replayed {
			checkReplay(t, e, c)
		}
	}
	for _, id := range []string{"reverse-text", "gsm8k", "math", "wordle", "alphabet-sort"} {
		if perEnv[id] < 5 {
			t.Errorf("%s has %d golden cases, want at least 5", id, perEnv[id])
		}
	}
	if len(cases) < 43 {
		t.Errorf("%d golden cases, want at least the issue's 43", len(cases))
	}
}

// checkReplay plays the golden assistant turns through grpo's episode and
// requires the reference game's replies, word for word, and its prompt.
func checkReplay(t *testing.T, e env.Environment, c goldenCase) {
	t.Helper()
	exs, err := e.Examples("train")
	if err != nil || len(exs) == 0 {
		t.Fatalf("%s: examples: %v", c.Env, err)
	}
	if len(c.Prompt) > 0 && !reflect.DeepEqual(exs[0].Prompt, c.Prompt) {
		t.Errorf("%s/%s: prompt %+v, reference %+v", c.Env, c.Name, exs[0].Prompt, c.Prompt)
	}
	ep := e.NewEpisode(env.Example{Answer: c.Answer, Info: c.Info})
	for i, m := range c.Completion {
		if m.Role != "assistant" {
			continue
		}
		reply, done, err := ep.Respond(context.Background(), m.Content)
		if err != nil {
			t.Fatalf("%s/%s: %v", c.Env, c.Name, err)
		}
		var want []chat.Message
		if i+1 < len(c.Completion) && c.Completion[i+1].Role == "user" {
			want = c.Completion[i+1 : i+2]
		}
		if !reflect.DeepEqual(reply, want) {
			t.Errorf("%s/%s: turn %d reply %+v, reference %+v", c.Env, c.Name, i/2+1, reply, want)
		}
		last := i+2 >= len(c.Completion)
		if done != (last && c.GameOver) {
			t.Errorf("%s/%s: turn %d done = %v; the reference game's end: %v after %d messages", c.Env, c.Name, i/2+1, done, c.GameOver, len(c.Completion))
		}
		if done {
			return
		}
	}
}
