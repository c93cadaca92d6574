package rollout

import (
	"context"
	"slices"
	"testing"

	"github.com/grpo-dev/grpo/env"
	_ "github.com/grpo-dev/grpo/env/alphabetsort"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/sampler"
)

// modelTurns returns the lengths of the runs of model tokens in tr, one
// per assistant turn.
func modelTurns(tr Trajectory) []int {
	var runs []int
	for i, m := range tr.ModelMask {
		switch {
		case m && (i == 0 || !tr.ModelMask[i-1]):
			runs = append(runs, 1)
		case m:
			runs[len(runs)-1]++
		}
	}
	return runs
}

func alphabetSort3(t *testing.T) (env.Environment, []env.Example) {
	t.Helper()
	e, err := env.New("alphabet-sort", map[string]any{"dataset_name": "synthetic", "min_turns": 3, "max_turns": 3, "num_train_examples": 2})
	if err != nil {
		t.Fatal(err)
	}
	exs, err := e.Examples("train")
	if err != nil {
		t.Fatal(err)
	}
	return e, exs
}

// TestLocalMultiTurnBudget is issue 11's bar: a 3-turn alphabet-sort
// episode with max_tokens 100 plays its 3 turns, each capped at 100
// tokens (the random policy never stops by itself, so each turn runs to
// the cap), because Local sizes the slot for the env's turns; before,
// max_tokens budgeted the whole conversation and the episode ended after
// turn 1 with its slot full.
func TestLocalMultiTurnBudget(t *testing.T) {
	tok := qwen3Tokenizer(t)
	m := vocabModel(t, tok)
	e, exs := alphabetSort3(t)
	p := rolloutParams()
	p.MaxTokens = 100
	stops := sampler.StopTokenIDs(tok)
	trajs, err := Local(context.Background(), m, tok, e, exs[:1], 2, p, 5, Options{EnableThinking: new(bool)})
	if err != nil {
		t.Fatal(err)
	}
	for i, tr := range trajs {
		runs := modelTurns(tr)
		if tr.Turns != 3 || len(runs) != 3 || len(tr.Errors) != 0 {
			t.Fatalf("trajectory %d: %d turns (model runs %v), errors %q; want 3 turns", i, tr.Turns, runs, tr.Errors)
		}
		end := 0
		for k, n := range runs {
			for end < len(tr.ModelMask) && !tr.ModelMask[end] {
				end++
			}
			end += n
			if n > 100 || n < 100 && !slices.Contains(stops, tr.Tokens[end-1]) {
				t.Errorf("trajectory %d turn %d: %d model tokens; want max_tokens 100, or fewer ending on a stop token", i, k+1, n)
			}
		}
		if tr.TruncatedBy == TruncatedContext || tr.Truncated != (tr.TruncatedBy == TruncatedMaxTokens) {
			t.Errorf("trajectory %d: truncated %v by %q; the slot must hold all 3 turns", i, tr.Truncated, tr.TruncatedBy)
		}
	}
}

// TestLocalContextTruncation: when the model's context is smaller than
// the 3 turns need, the slot is capped at it and an episode that outgrows
// it ends truncated with the reason "context" — not cut silently.
func TestLocalContextTruncation(t *testing.T) {
	tok := qwen3Tokenizer(t)
	e, exs := alphabetSort3(t)
	longest := 0
	for _, ex := range exs {
		ids, err := RenderPrompt(tok, ex.Prompt, new(bool))
		if err != nil {
			t.Fatal(err)
		}
		longest = max(longest, len(ids))
	}
	m := vocabModel(t, tok)
	small := *m.Config
	small.MaxPositions = longest + 150 // room for turn 1, not for three
	m = model.NewRandom(&small, cpu.New(), 3)
	p := rolloutParams()
	p.MaxTokens = 100
	trajs, err := Local(context.Background(), m, tok, e, exs, 1, p, 5, Options{EnableThinking: new(bool)})
	if err != nil {
		t.Fatal(err)
	}
	for i, tr := range trajs {
		if !tr.Truncated || tr.TruncatedBy != TruncatedContext || tr.Turns >= 3 || len(tr.Errors) != 0 {
			t.Errorf("trajectory %d: %d turns, truncated %v by %q, errors %q; want fewer than 3 turns truncated by context", i, tr.Turns, tr.Truncated, tr.TruncatedBy, tr.Errors)
		}
		if n := len(tr.PromptTokens) + len(tr.Tokens); n > small.MaxPositions {
			t.Errorf("trajectory %d: %d tokens, more than the context %d", i, n, small.MaxPositions)
		}
	}
}

// limitedEnv is an echoEnv that declares a turn limit.
type limitedEnv struct {
	echoEnv
	limit int
}

func (l limitedEnv) MaxTurns() int { return l.limit }

func TestSizingTurns(t *testing.T) {
	for _, c := range []struct {
		e              env.Environment
		maxTurns, want int
	}{
		{echoEnv{}, 0, 1}, {echoEnv{}, 4, 4}, {limitedEnv{limit: 5}, 0, 5}, {limitedEnv{limit: 5}, 2, 2}, {limitedEnv{limit: 5}, 9, 5}, {limitedEnv{}, 0, 1},
	} {
		if got := sizingTurns(c.e, c.maxTurns); got != c.want {
			t.Errorf("sizingTurns(%T limit, cap %d) = %d, want %d", c.e, c.maxTurns, got, c.want)
		}
	}
}
