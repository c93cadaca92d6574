package builtins_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/envtest"
	"github.com/grpo-dev/grpo/rubric"
)

// TestV1GamesGolden: testdata/verifiers_v1_games_golden.jsonl (verifiers
// a60a606's own code on each case, see its script) holds at least 15 v1
// cases per environment; each wordle game's secret is the one grpo's
// seeded stream gives its seed (its transcript is checked with the other
// golden rows); wiki-search's tasks, tool replies and judged rewards
// (through env.Score, the judge answering as scripted) are verifiers'.
func TestV1GamesGolden(t *testing.T) {
	perEnv := map[string]int{}
	for _, c := range loadGoldenFile(t, "../testdata/verifiers_v1_games_golden.jsonl") {
		if c.Version != "v1" || c.Source != "ran" {
			t.Errorf("%s/%s: version %q source %q, want v1, ran", c.Env, c.Name, c.Version, c.Source)
		}
		perEnv[c.Env]++
		switch {
		case c.Env == "wordle":
			checkWordleSeed(t, c)
		case c.Kind == "tasks":
			checkWikiTasks(t, c)
		case c.Kind == "tool":
			checkWikiTool(t, c)
		case c.Kind == "judge":
			checkWikiJudge(t, c)
		default:
			t.Errorf("%s/%s: unknown row kind %q", c.Env, c.Name, c.Kind)
		}
	}
	for _, id := range []string{"wordle", "wiki-search"} {
		if perEnv[id] < 15 {
			t.Errorf("%s has %d v1 golden cases, want at least 15", id, perEnv[id])
		}
	}
}

func checkWordleSeed(t *testing.T, c goldenCase) {
	seed, ok := c.Info["seed"].(float64)
	if !ok {
		t.Fatalf("%s: info %v has no seed", c.Name, c.Info)
	}
	exs, err := envtest.NewEnv(t, "wordle", map[string]any{"seed": int(seed), "num_train_examples": 1}, env.WithVersion("v1")).Examples("train")
	if err != nil || exs[0].Answer != c.Answer {
		t.Errorf("%s: game seeded %v has secret %+v (%v), verifiers %q", c.Name, seed, exs, err, c.Answer)
	}
}

func checkWikiTasks(t *testing.T, c goldenCase) {
	exs, err := envtest.NewEnv(t, "wiki-search", nil, env.WithVersion("v1")).Examples("eval")
	if err != nil || len(exs) != len(c.Tasks) {
		t.Fatalf("%d examples (%v), the taskset has %d", len(exs), err, len(c.Tasks))
	}
	for i, task := range c.Tasks {
		ex := exs[i]
		if task.SystemPrompt != nil || len(ex.Prompt) != 1 || ex.Prompt[0].Role != "user" || ex.Prompt[0].Content != task.Prompt ||
			ex.Answer != task.Answer || ex.Info["question"] != task.Question {
			t.Errorf("task %d: %+v %q %v, verifiers %+v", i, ex.Prompt, ex.Answer, ex.Info, task)
		}
	}
}

func checkWikiTool(t *testing.T, c goldenCase) {
	e := envtest.NewEnv(t, "wiki-search", nil, env.WithVersion("v1")).(env.ToolEnvironment)
	for _, tl := range e.Tools() {
		if tl.Name() != c.Tool {
			continue
		}
		args, _ := json.Marshal(c.Arguments)
		got, err := tl.Call(context.Background(), args)
		if err != nil {
			got = err.Error() // what the model is shown
		}
		if got != c.ToolReply {
			t.Errorf("%s: %s(%s) = %q, verifiers %q", c.Name, c.Tool, args, got, c.ToolReply)
		}
		var schema struct{ Function struct{ Description string } }
		if err := json.Unmarshal(tl.Schema(), &schema); err != nil || schema.Function.Description != c.Description {
			t.Errorf("%s: description %q (%v), verifiers %q", c.Tool, schema.Function.Description, err, c.Description)
		}
		return
	}
	t.Errorf("%s: no tool %s", c.Name, c.Tool)
}

func checkWikiJudge(t *testing.T, c goldenCase) {
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewDecoder(r.Body).Decode(&got)
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": c.JudgeReply}}}})
	}))
	defer srv.Close()
	args := map[string]any{"judge_base_url": srv.URL, "judge_api_key_var": ""}
	e := envtest.NewEnv(t, "wiki-search", args, env.WithVersion("v1"))
	spec, _ := env.Lookup("wiki-search")
	res, err := env.Score(context.Background(), e, spec.ScaleOf("v1"), env.ScoreRow{Prompt: c.Prompt, Completion: c.Completion, Answer: c.Answer, Info: c.Info}, env.ScoreOptions{})
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	if (got != nil) != c.JudgeCalled || (c.JudgeCalled && !reflect.DeepEqual(got, c.JudgeRequest)) {
		t.Errorf("%s: judge request %v, verifiers' %v", c.Name, got, c.JudgeRequest)
	}
	if c.JudgeError != "" {
		if len(res.Errors) == 0 {
			t.Errorf("%s: no error for a judge reply without a verdict (%+v); verifiers: %s", c.Name, res, c.JudgeError)
		}
		return
	}
	if len(res.Errors) > 0 || res.VerifiersReward != c.Reward || !reflect.DeepEqual(res.Metrics, c.Metrics) {
		t.Errorf("%s: %+v, verifiers %v %v", c.Name, res, c.Reward, c.Metrics)
	}
}

// TestGameVersionsSelectBehaviour: wordle and wiki-search are v1 with no
// version, v0 when named or by verifiers 8d4b33247's Hub version (also as
// id@version).
func TestGameVersionsSelectBehaviour(t *testing.T) {
	for _, c := range []struct{ ref, version, metric, tool string }{
		{"wordle", "", "game_reward", ""},
		{"wordle", "v0", "correct_answer", ""},
		{"wordle@0.1.7", "", "correct_answer", ""},
		{"wiki-search", "latest", "exact_match", "wiki_search_pages"},
		{"wiki-search", "0.1.23", "exact_match", "search_pages"},
		{"wiki-search@v0", "", "exact_match", "search_pages"},
	} {
		e, err := env.New(c.ref, nil, env.WithVersion(c.version))
		if err != nil {
			t.Fatalf("%s version %q: %v", c.ref, c.version, err)
		}
		r := e.Rubric().Score(context.Background(), rubric.Rollout{Completion: []chat.Message{{Role: "assistant", Content: "[crane]"}}, Answer: "crane"})
		if _, ok := r.Metrics[c.metric]; !ok {
			t.Errorf("%s version %q: metrics %v, want %s", c.ref, c.version, r.Metrics, c.metric)
		}
		if te, ok := e.(env.ToolEnvironment); ok && te.Tools()[0].Name() != c.tool {
			t.Errorf("%s version %q: first tool %s, want %s", c.ref, c.version, te.Tools()[0].Name(), c.tool)
		}
	}
}
