// Package gsm8k is the gsm8k builtin: grade-school math word problems
// scored with math-verify, as Prime Intellect's gsm8k. It registers
// itself with package env on init.
package gsm8k

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/lab"
	"github.com/grpo-dev/grpo/rubric"
)

// gsm8k has two versions. v1 (the default) follows verifiers a60a606's
// gsm8k taskset (v1.go): the instruction and question in one user
// message, "#### N" on the last line as the answer, the correct reward.
// v0 follows Prime Intellect's gsm8k environment at verifiers 8d4b33247:
// the question as the user message after the boxed system prompt and
// verifiers' MathRubric (lab.MathRubric: correct_answer, math-verify on
// the last \boxed{}). Both take the reference answer from after "####".
// Data: the hub's openai/gsm8k ("main" config) unless dataset_path names
// a local directory with train and test files (.jsonl, .jsonl.gz or
// .parquet) or a single file used for both splits.

func init() {
	env.MustRegister(env.Spec{
		ID:          "gsm8k",
		Description: `grade-school math word problems; reward = correct: the last reply's last "#### N" checked with math-verify, as verifiers a60a606's taskset (v0: correct_answer, the last \boxed{})`,
		Data:        `hub dataset openai/gsm8k, config "main": split "test" for both (v0: train; eval = test), as Lab; dataset_path = DIR for local train/test files`,
		Versions:    lab.Versions("0.1.3"),
		Args: []env.ArgSpec{
			{Name: "system_prompt", Type: env.ArgString, Default: lab.BoxedSystemPrompt, Help: "system message (v1 sends none unless this is set to another text: its instruction is in the user message)"},
			{Name: "split", Type: env.ArgString, Default: "", Help: `split read for both train and eval; "" = v1: "test", as the Lab's taskset; v0: train, and test for eval`},
			{Name: "num_train_examples", Type: env.ArgInt, Default: -1, Help: "first N training examples (-1: all)"},
			{Name: "num_eval_examples", Type: env.ArgInt, Default: -1, Help: "first N test examples (-1: all)"},
			{Name: "dataset_path", Type: env.ArgString, Default: "", Help: "local directory with train/test .jsonl[.gz] or .parquet files; \"\" = hub"},
			{Name: "dataset_name", Type: env.ArgString, Default: "openai/gsm8k", Help: "hub dataset when dataset_path is empty"},
			{Name: "dataset_config", Type: env.ArgString, Default: "main", Help: "config of the hub dataset"},
		},
		New: func(a env.Args, o env.Options) (env.Environment, error) {
			if p := a.String("dataset_path"); p != "" {
				if _, err := os.Stat(p); err != nil {
					return nil, fmt.Errorf("dataset_path %q: %v; give a directory with train.jsonl and test.jsonl (or .parquet)", p, err)
				}
			}
			if s := a.String("split"); s != "" && s != "train" && s != "test" {
				return nil, fmt.Errorf(`split %q: gsm8k has "train" and "test"; use one of them, or "" for the version's default`, s)
			}
			return &gsm8k{args: a, opts: o, v0: lab.IsV0(o)}, nil
		},
	})
}

type gsm8k struct {
	args env.Args
	opts env.Options
	v0   bool
}

func (e *gsm8k) ID() string                         { return "gsm8k" }
func (e *gsm8k) NewEpisode(env.Example) env.Episode { return env.SingleTurnEpisode{} }

func (e *gsm8k) Rubric() *rubric.Rubric {
	if e.v0 {
		return lab.MathRubric
	}
	return correctRubric
}

// hashAnswer is verifiers' extract_hash_answer: the text after "####", or
// all of it when there is none.
func hashAnswer(s string) string {
	if a, ok := rubric.HashAnswer(s); ok {
		return a
	}
	return s
}

func (e *gsm8k) Examples(split string) ([]env.Example, error) {
	var hubSplit string
	var n int
	switch split {
	case "train":
		hubSplit, n = "train", e.args.Int("num_train_examples")
	case "eval":
		hubSplit, n = "test", e.args.Int("num_eval_examples")
	default:
		return nil, env.SplitErr(e.ID(), split)
	}
	if s := e.args.String("split"); s != "" {
		hubSplit = s
	} else if !e.v0 {
		hubSplit = "test" // the Lab's taskset trains and evaluates on one split
	}
	var rows []env.Row
	var err error
	if p := e.args.String("dataset_path"); p != "" {
		var file string
		if file, err = splitFile(p, hubSplit); err == nil {
			rows, err = env.LoadRows(file)
		}
	} else {
		rows, err = lab.HubRows(context.Background(), e.opts, e.ID(), e.args.String("dataset_name"), e.args.String("dataset_config"), hubSplit,
			`dataset_path = "DIR" (a directory with train.jsonl and test.jsonl, or .parquet)`)
	}
	if err != nil {
		return nil, err
	}
	if n >= 0 && n < len(rows) {
		rows = rows[:n]
	}
	if !e.v0 {
		return v1Examples(rows, e.args.String("system_prompt"))
	}
	return env.QAExamples(rows, env.QAFields{Question: "question", Answer: "answer"}, e.args.String("system_prompt"), hashAnswer)
}

// splitFile finds a split's file in a dataset directory: <split>.jsonl,
// .jsonl.gz or .parquet, or <split>-*.parquet. A path that is a file is
// used for every split.
func splitFile(path, split string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("dataset %s: %v", path, err)
	}
	if !st.IsDir() {
		return path, nil
	}
	for _, name := range []string{split + ".jsonl", split + ".jsonl.gz", split + ".parquet"} {
		if p := filepath.Join(path, name); fileExists(p) {
			return p, nil
		}
	}
	if m, _ := filepath.Glob(filepath.Join(path, split+"-*.parquet")); len(m) == 1 {
		return m[0], nil
	}
	return "", fmt.Errorf("dataset %s: no %s.jsonl, %s.jsonl.gz or %s.parquet there; name the split's file so", path, split, split, split)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
