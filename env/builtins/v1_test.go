package builtins_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/envtest"
	"github.com/grpo-dev/grpo/rubric"
)

// The v1 behaviours (verifiers a60a606's tasksets) of gsm8k, reverse-text
// and alphabet-sort, held to what running that code gave
// (testdata/reference/verifiers_v1_golden.py).

const v1Golden = "../testdata/verifiers_v1_golden.jsonl"

// TestV1GoldenCases: the v1 file has at least 15 cases per builtin, each
// computed for v1 by running verifiers' code (TestRewardsMatchVerifiers
// scores them with the rubric).
func TestV1GoldenCases(t *testing.T) {
	n := map[string]int{}
	for _, c := range loadGoldenFile(t, v1Golden) {
		n[c.Env]++
		if c.Version != "v1" || c.Source != "ran" {
			t.Errorf("%s/%s: version %q, source %q; want v1 and ran", c.Env, c.Name, c.Version, c.Source)
		}
	}
	for _, id := range []string{"gsm8k", "reverse-text", "alphabet-sort"} {
		if n[id] < 15 {
			t.Errorf("%s has %d v1 golden cases, want at least 15", id, n[id])
		}
	}
}

// TestV1GoldenThroughScore: `grpo env score`'s path (env.Score) gives each
// v1 golden row verifiers' reward and metrics, its version read from the
// row; alphabet-sort's rows whose replies are the task's user turns
// replay through grpo's episode unchanged.
func TestV1GoldenThroughScore(t *testing.T) {
	for _, c := range loadGoldenFile(t, v1Golden) {
		line, _ := json.Marshal(c)
		row, err := env.ParseScoreRow(line)
		if err != nil || row.Version != "v1" {
			t.Fatalf("%s/%s: %v (version %q)", c.Env, c.Name, err, row.Version)
		}
		spec, _ := env.Lookup(c.Env)
		e := envtest.NewEnv(t, c.Env, row.Args, env.WithVersion(row.Version))
		res, err := env.Score(context.Background(), e, spec.ScaleOf(row.Version), row, env.ScoreOptions{})
		if err != nil || !envtest.Near(res.VerifiersReward, c.Reward) || !reflect.DeepEqual(res.Metrics, c.Metrics) && !nearMetrics(res.Metrics, c.Metrics) {
			t.Errorf("%s/%s: %+v (%v); verifiers %v %v", c.Env, c.Name, res, err, c.Reward, c.Metrics)
		}
		if c.Env != "alphabet-sort" || !repliesAreUserTurns(c) {
			continue
		}
		if res, _ := env.Score(context.Background(), e, spec.ScaleOf(row.Version), row, env.ScoreOptions{Replay: true}); res.ReplyDiffers != "" || !envtest.Near(res.VerifiersReward, c.Reward) {
			t.Errorf("%s/%s replayed: %+v", c.Env, c.Name, res)
		}
	}
}

func nearMetrics(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if w, ok := a[k]; !ok || !envtest.Near(v, w) {
			return false
		}
	}
	return true
}

// repliesAreUserTurns: the completion's k-th user message is user_turns[k].
func repliesAreUserTurns(c goldenCase) bool {
	turns, _ := c.Info["user_turns"].([]any)
	k := 1
	for _, m := range c.Completion {
		if m.Role == "user" {
			if k >= len(turns) || turns[k] != m.Content {
				return false
			}
			k++
		}
	}
	return true
}

// taskStream is one line of testdata/verifiers_v1_tasks.jsonl: a v1
// taskset's config, the rows its dataset held and the first tasks its
// load() made of them.
type taskStream struct {
	Env     string           `json:"env"`
	Config  map[string]any   `json:"config"`
	Dataset []any            `json:"dataset"` // name, config, split
	Rows    []map[string]any `json:"rows"`
	Take    int              `json:"take"`
	Tasks   []struct {
		Prompt       string         `json:"prompt"`
		SystemPrompt string         `json:"system_prompt"`
		Answer       string         `json:"answer"`
		Info         map[string]any `json:"info"`
	} `json:"tasks"`
}

// TestV1TaskStreams: from the same rows, each builtin's v1 examples are the
// tasks the Lab's v1 taskset made, in its order: gsm8k's and
// reverse-text's prompts and answers, and alphabet-sort's infinite stream
// (Python's random.Random drawing every layout, fresh ones on the next
// pass over the rows) with its user turns and ground truths.
func TestV1TaskStreams(t *testing.T) {
	f, err := os.Open("../testdata/verifiers_v1_tasks.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s taskStream
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		var body strings.Builder
		for _, r := range s.Rows {
			b, _ := json.Marshal(r)
			body.Write(append(b, '\n'))
		}
		args := map[string]any{"num_train_examples": s.Take}
		for k, v := range s.Config {
			args[k] = v
		}
		var opts []env.Option
		if s.Env == "gsm8k" {
			args["dataset_path"] = envtest.WriteFile(t, t.TempDir(), "test.jsonl", body.String())
		} else {
			srv, _ := fakeDatasetHub(t, s.Dataset[0].(string), map[string][]byte{"data/train.jsonl": []byte(body.String())})
			opts = append(opts, useFakeHub(t, srv.URL, false))
		}
		exs, err := envtest.NewEnv(t, s.Env, args, opts...).Examples("train")
		if err != nil || len(exs) != len(s.Tasks) {
			t.Fatalf("%s %v: %d examples, %v; the Lab made %d", s.Env, s.Config, len(exs), err, len(s.Tasks))
		}
		for i, task := range s.Tasks {
			ex := exs[i]
			var want []chat.Message
			if task.SystemPrompt != "" {
				want = append(want, chat.Message{Role: "system", Content: task.SystemPrompt})
			}
			prompt := task.Prompt
			if s.Env == "alphabet-sort" { // the scripted user opens with the first turn
				prompt = task.Info["user_turns"].([]any)[0].(string)
				if got := ex.Info; !reflect.DeepEqual(jsonRound(got), task.Info) {
					t.Errorf("%s %v task %d: info %v, the Lab's %v", s.Env, s.Config, i, got, task.Info)
				}
			}
			want = append(want, chat.Message{Role: "user", Content: prompt})
			if !reflect.DeepEqual(ex.Prompt, want) || s.Env != "alphabet-sort" && ex.Answer != task.Answer {
				t.Errorf("%s %v task %d: prompt %+v answer %q, the Lab's %+v %q", s.Env, s.Config, i, ex.Prompt, ex.Answer, want, task.Answer)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

func jsonRound(v any) any {
	b, _ := json.Marshal(v)
	var out any
	json.Unmarshal(b, &out)
	return out
}

// TestVersionsSelectBehaviour: v1 is the default ("latest" too); "v0", or
// the Hub version verifiers 8d4b33247's pyproject published, selects the
// old behaviour, here told apart by its metric's name.
func TestVersionsSelectBehaviour(t *testing.T) {
	done := []chat.Message{{Role: "assistant", Content: "<reversed_text>x</reversed_text>"}}
	for _, c := range []struct{ ref, version, metric string }{
		{"reverse-text", "", "lcs"},
		{"reverse-text", "latest", "lcs"},
		{"reverse-text", "v0", "lcs_reward_func"},
		{"reverse-text@0.1.4", "", "lcs_reward_func"},
		{"gsm8k@v0", "", "correct_answer"},
		{"gsm8k", "0.1.3", "correct_answer"},
		{"gsm8k", "", "correct"},
		{"alphabet-sort", "0.1.12", "weighted_reward"},
		{"alphabet-sort", "v1", "alphabet_sort"},
	} {
		e, err := env.New(c.ref, nil, env.WithVersion(c.version))
		if err != nil {
			t.Fatalf("%s version %q: %v", c.ref, c.version, err)
		}
		r := e.Rubric().Score(context.Background(), rubric.Rollout{Completion: done, Answer: "x", Info: map[string]any{"num_turns": 1}})
		if _, ok := r.Metrics[c.metric]; !ok || len(r.Metrics) != 1 {
			t.Errorf("%s version %q: metrics %v, want %s", c.ref, c.version, r.Metrics, c.metric)
		}
	}
	if _, err := env.New("gsm8k", nil, env.WithVersion("v2")); err == nil || !strings.Contains(err.Error(), "v1 (verifiers a60a606 taskset) or v0 (verifiers 8d4b33247)") {
		t.Errorf("unknown version: %v", err)
	}
}

// TestV1AlphabetSortShortRows: when a whole pass over the rows gives no
// task, v1 fails naming the dataset and the args to lower, as the Lab's
// load raises, rather than looping forever.
func TestV1AlphabetSortShortRows(t *testing.T) {
	repo := "kalomaze/alphabetic-arxiv-authors-it1"
	srv, _ := fakeDatasetHub(t, repo, map[string][]byte{"data/train.jsonl": []byte(`{"names": ["Only One"]}` + "\n")})
	_, err := envtest.NewEnv(t, "alphabet-sort", nil, useFakeHub(t, srv.URL, false)).Examples("train")
	if err == nil || !strings.Contains(err.Error(), repo) || !strings.Contains(err.Error(), "lower min_turns") {
		t.Errorf("short rows: %v", err)
	}
}
