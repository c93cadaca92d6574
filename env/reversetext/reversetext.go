// Package reversetext is the reverse-text builtin: reverse a sentence
// character by character, scored by the difflib ratio, as Prime
// Intellect's reverse_text. It registers itself with package env on init.
package reversetext

import (
	"context"
	"strconv"
	"strings"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/lab"
	"github.com/grpo-dev/grpo/rubric"
)

// reverse-text has two versions that score alike. v1 (the default)
// follows verifiers a60a606's reverse_text taskset: the reward is named
// lcs and reads the first <reversed_text> of the last reply only (no
// tag: the empty string), one turn; training and eval both read the
// split from its first row, as the Lab's single task list does. v0
// follows Prime Intellect's reverse_text environment at verifiers
// 8d4b33247: lcs_reward_func, XMLParser(["reversed_text"]) (the first tag
// of the latest assistant turn that has one), and grpo holds out the last
// num_eval_examples rows for eval. Both: the same system prompt, a tag
// inside <think> counts like any other, the difflib ratio against the
// reversed prompt, and the "prompt" column of the hub dataset
// PrimeIntellect/Reverse-Text-RL (dataset_name, dataset_split) through
// the HF cache. dataset_name = "synthetic" selects English-like sentences
// generated from seed instead (eval from a separate stream), which need
// no network (tests and offline runs use it).

const (
	reverseTextSystemPrompt = "Reverse the text character-by-character. Put your answer in <reversed_text> tags."
	reverseTextDataset      = "PrimeIntellect/Reverse-Text-RL"
)

func init() {
	env.MustRegister(env.Spec{
		ID:          "reverse-text",
		Description: "reverse a sentence character by character inside <reversed_text> tags; reward = lcs: difflib ratio of the last reply's first tag, as verifiers a60a606's taskset (v0: lcs_reward_func, the same score)",
		Data:        "hub dataset " + reverseTextDataset + ` (dataset_name, dataset_split), as Lab; dataset_name = "synthetic" for generated sentences`,
		Versions:    lab.Versions("0.1.4"),
		Args: []env.ArgSpec{
			{Name: "dataset_name", Type: env.ArgString, Default: reverseTextDataset, Help: `hub dataset with a "prompt" column, as Lab's; "synthetic" = sentences generated from seed (no network)`},
			{Name: "dataset_split", Type: env.ArgString, Default: "train", Help: "split of dataset_name"},
			{Name: "system_prompt", Type: env.ArgString, Default: reverseTextSystemPrompt, Help: "system message"},
			{Name: "num_train_examples", Type: env.ArgInt, Default: -1, Help: "training examples (-1 = every row; v0: but the eval ones; synthetic: 1000)"},
			{Name: "num_eval_examples", Type: env.ArgInt, Default: 100, Help: "eval examples: the first rows of the split (v0: the last; synthetic: a separate stream)"},
			{Name: "seed", Type: env.ArgInt, Default: 0, Help: "seed of the synthetic dataset"},
		},
		New: func(a env.Args, o env.Options) (env.Environment, error) {
			if err := lab.CheckDatasetName(a); err != nil {
				return nil, err
			}
			return &reverseText{args: a, opts: o, v0: lab.IsV0(o)}, nil
		},
	})
}

type reverseText struct {
	args env.Args
	opts env.Options
	v0   bool
}

func (e *reverseText) ID() string                         { return "reverse-text" }
func (e *reverseText) NewEpisode(env.Example) env.Episode { return env.SingleTurnEpisode{} }

func (e *reverseText) Rubric() *rubric.Rubric {
	if e.v0 {
		return lcsRewardFuncRubric
	}
	return lcsRubric
}

// lcsRubric is v1's lcs: the last reply only.
var lcsRubric = lab.MustRubric(rubric.Term{Name: "lcs", Weight: 1, Func: rubric.Reward(func(r rubric.Rollout) float64 {
	got, _ := rubric.XMLTag(lab.LastReply(r), "reversed_text")
	return rubric.Ratio(got, r.Answer)
})})

// lcsRewardFuncRubric is v0's lcs_reward_func: the latest turn with a tag.
var lcsRewardFuncRubric = lab.MustRubric(rubric.Term{Name: "lcs_reward_func", Weight: 1, Func: rubric.Reward(func(r rubric.Rollout) float64 {
	got, _ := lab.ParseLast(r, func(t string) (string, bool) { return rubric.XMLTag(t, "reversed_text") })
	return rubric.Ratio(got, r.Answer)
})})

func (e *reverseText) Examples(split string) ([]env.Example, error) {
	if split != "train" && split != "eval" {
		return nil, env.SplitErr(e.ID(), split)
	}
	nTrain, nEval := e.args.Int("num_train_examples"), e.args.Int("num_eval_examples")
	system := e.args.String("system_prompt")
	var texts []string
	if name := e.args.String("dataset_name"); name != lab.SyntheticData {
		rows, err := lab.HubRows(context.Background(), e.opts, e.ID(), name, "", e.args.String("dataset_split"), `dataset_name = "synthetic"`)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			t, err := env.TextField(r, "prompt")
			if err != nil {
				return nil, err
			}
			texts = append(texts, t)
		}
		switch {
		case !e.v0 && split == "train":
			texts = limit(texts, nTrain)
		case !e.v0:
			texts = limit(texts, max(nEval, 0))
		case split == "train":
			texts = limit(texts[:max(0, len(texts)-max(nEval, 0))], nTrain)
		default:
			texts = texts[max(0, len(texts)-max(nEval, 0)):]
		}
	} else {
		n, stream := nTrain, uint64(0)
		if n < 0 {
			n = lab.SyntheticDefaultCount
		}
		if split == "eval" {
			n, stream = nEval, 1
		}
		r := lab.NewRNG(e.args.Int("seed"), stream)
		for i := 0; i < n; i++ {
			texts = append(texts, syntheticText(r))
		}
	}
	out := make([]env.Example, len(texts))
	for i, t := range texts {
		out[i] = env.Example{ID: split + "-" + strconv.Itoa(i), Prompt: env.ChatPrompt(system, t), Answer: reverseRunes(t)}
	}
	return out, nil
}

// limit keeps the first n texts; n < 0 keeps them all.
func limit(texts []string, n int) []string {
	if n >= 0 && n < len(texts) {
		return texts[:n]
	}
	return texts
}

// reverseRunes reverses by code point, as Python's s[::-1] does.
func reverseRunes(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// syntheticText makes one to three sentences of 4 to 12 words: short
// enough for a small model, long enough that partial credit matters.
func syntheticText(r *lab.RNG) string {
	var sentences []string
	for s := r.Between(1, 3); s > 0; s-- {
		words := make([]string, r.Between(4, 12))
		for i := range words {
			words[i] = lab.Pick(r, vocabulary)
		}
		words[0] = strings.ToUpper(words[0][:1]) + words[0][1:]
		end := lab.Pick(r, []string{".", ".", ".", "!", "?"})
		sentences = append(sentences, strings.Join(words, " ")+end)
	}
	return strings.Join(sentences, " ")
}
