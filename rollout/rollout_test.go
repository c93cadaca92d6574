package rollout

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/rubric"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
)

// echoEnv is a multi-turn environment: it answers each assistant turn with
// a user message quoting its length, and ends after `turns` turns. An
// example whose ID is "fail" errors on the second turn; "panic" panics.
type echoEnv struct{ turns int }

func (echoEnv) ID() string                              { return "echo" }
func (echoEnv) Examples(string) ([]env.Example, error)  { return nil, nil }
func (e echoEnv) NewEpisode(ex env.Example) env.Episode { return &echoEpisode{env: e, id: ex.ID} }
func (echoEnv) Rubric() *rubric.Rubric                  { return turnsRubric }
func (e *echoEpisode) Respond(_ context.Context, text string) ([]chat.Message, bool, error) {
	e.n++
	switch {
	case e.id == "fail" && e.n == 2:
		return nil, false, errors.New("tool server down")
	case e.id == "panic" && e.n == 1:
		var m map[string]int
		m["x"]++
	}
	if e.n >= e.env.turns {
		return nil, true, nil
	}
	return []chat.Message{{Role: "user", Content: "You wrote " + strings.Repeat("*", len(text)%7) + ". Again."}}, false, nil
}

type echoEpisode struct {
	env echoEnv
	id  string
	n   int
}

// turnsRubric rewards the number of assistant turns, a third each.
var turnsRubric, _ = rubric.Weighted(rubric.Term{Name: "turns", Weight: 1, Func: rubric.Reward(func(r rubric.Rollout) float64 {
	return float64(len(r.AssistantTurns())) / 3
})})

// vocabModel is a small random Qwen3 whose vocabulary is the tokenizer's,
// so every special token is a valid id.
func vocabModel(t testing.TB, tok *tokenizer.Tokenizer) *model.Model {
	cfg := &model.Config{ModelType: "qwen3", HiddenSize: 16, IntermediateSize: 32, NumLayers: 1, NumHeads: 2,
		NumKVHeads: 1, HeadDim: 8, VocabSize: tok.VocabSize(), RMSNormEps: 1e-6, RopeTheta: 10000, HiddenAct: "silu"}
	return model.NewRandom(cfg, cpu.New(), 3)
}

func rolloutParams() sampler.Params {
	p := sampler.DefaultParams()
	p.MaxTokens = 5
	p.TopK = 1000
	return p
}

func TestRolloutsMultiTurn(t *testing.T) {
	tok := qwen3Tokenizer(t)
	m := vocabModel(t, tok)
	// Four slots for six episodes: later episodes start as earlier end.
	s, err := sampler.New(m, tok, sampler.Config{Slots: 4, MaxLen: 256, PrefillTokens: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	examples := []env.Example{
		{ID: "a", Prompt: []chat.Message{{Role: "system", Content: "Echo game."}, {Role: "user", Content: "Say something."}}},
		{ID: "fail", Prompt: []chat.Message{{Role: "user", Content: "Say more."}}},
		{ID: "panic", Prompt: []chat.Message{{Role: "user", Content: "Go."}}},
	}
	trajs, err := Play(context.Background(), s, tok, echoEnv{turns: 3}, examples, 2, rolloutParams(), 17, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(trajs) != 6 || s.FreeSlots() != 4 {
		t.Fatalf("%d trajectories, %d free slots; want 6 and 4", len(trajs), s.FreeSlots())
	}
	for i, tr := range trajs {
		if tr.ID != examples[i/2].ID {
			t.Errorf("trajectory %d is of example %q, want %q", i, tr.ID, examples[i/2].ID)
		}
		checkPartition(t, tok, tr)
		checkTemplate(t, tok, tr)
		checkLogprobs(t, m, tr)
		switch tr.ID {
		case "a":
			if tr.Turns != 3 || tr.Reward != 1 || len(tr.Errors) != 0 {
				t.Errorf("trajectory %d: %d turns, reward %v, errors %q; want 3, 1, none", i, tr.Turns, tr.Reward, tr.Errors)
			}
		case "fail", "panic":
			wantTurns, wantErr := 2, "turn 2: respond: tool server down"
			if tr.ID == "panic" {
				wantTurns, wantErr = 1, "turn 1: respond: panic: assignment to entry in nil map (at"
			}
			if tr.Turns != wantTurns || tr.Reward != 0 || len(tr.Errors) != 1 || !strings.HasPrefix(tr.Errors[0], wantErr) || tr.Metrics["errors/episode"] != 1 {
				t.Errorf("trajectory %d: %d turns, reward %v, errors %q, metrics %v; want %d turns, reward 0, error %q", i, tr.Turns, tr.Reward, tr.Errors, tr.Metrics, wantTurns, wantErr)
			}
		}
	}
	// Same seed, same trajectories; the two rollouts of an example differ.
	again, err := Play(context.Background(), s, tok, echoEnv{turns: 3}, examples, 2, rolloutParams(), 17, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range trajs {
		if !slices.Equal(trajs[i].Tokens, again[i].Tokens) {
			t.Errorf("trajectory %d differs between two runs with the same seed", i)
		}
	}
	if slices.Equal(trajs[0].Tokens, trajs[1].Tokens) {
		t.Error("the two rollouts of example a are identical")
	}
}

// checkPartition: mask, tokens and log-probs line up; model tokens and
// environment tokens split Tokens exactly, turn by turn.
func checkPartition(t *testing.T, tok *tokenizer.Tokenizer, tr Trajectory) {
	t.Helper()
	if len(tr.ModelMask) != len(tr.Tokens) || len(tr.Logprobs) != len(tr.Tokens) {
		t.Fatalf("%s: %d tokens, %d mask, %d log-probs", tr.ID, len(tr.Tokens), len(tr.ModelMask), len(tr.Logprobs))
	}
	runs := 0
	for i, model := range tr.ModelMask {
		if model && (i == 0 || !tr.ModelMask[i-1]) {
			runs++
		}
		if !model && tr.Logprobs[i] != 0 {
			t.Errorf("%s: environment token %d has log-prob %v", tr.ID, i, tr.Logprobs[i])
		}
		if model && tr.Logprobs[i] >= 0 {
			t.Errorf("%s: model token %d has log-prob %v", tr.ID, i, tr.Logprobs[i])
		}
	}
	if runs != tr.Turns {
		t.Errorf("%s: %d runs of model tokens for %d turns", tr.ID, runs, tr.Turns)
	}
}

// checkTemplate: the trajectory up to its last assistant turn decodes to
// what the chat template writes for the same conversation — prompt,
// assistant turns as decoded, environment replies — with the generation
// prompt; so the environment tokens are the template's.
func checkTemplate(t *testing.T, tok *tokenizer.Tokenizer, tr Trajectory) {
	t.Helper()
	last := len(tr.Tokens)
	for last > 0 && tr.ModelMask[last-1] {
		last--
	}
	conv := append(slices.Clone(tr.Prompt), tr.Messages[:len(tr.Messages)-1]...)
	if strings.Contains(tok.Decode(tr.Tokens), "</think>") {
		t.Logf("%s: the random model wrote </think>, which the template rewrites; text not compared", tr.ID)
		return
	}
	want, err := tok.ApplyChatTemplate(conv, tokenizer.ChatOptions{AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	got := tok.Decode(append(slices.Clone(tr.PromptTokens), tr.Tokens[:last]...))
	if got != want {
		t.Errorf("%s: trajectory text differs from the template:\ngot  %q\nwant %q", tr.ID, got, want)
	}
}

// checkLogprobs: a full forward over prompt and trajectory gives the
// sampler's log-prob for every model token.
func checkLogprobs(t *testing.T, m *model.Model, tr Trajectory) {
	t.Helper()
	full := append(slices.Clone(tr.PromptTokens), tr.Tokens...)
	lp, err := m.TokenLogprobs(full, len(tr.PromptTokens))
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for i, model := range tr.ModelMask {
		if model {
			worst = math.Max(worst, math.Abs(float64(lp[i]-tr.Logprobs[i])))
		}
	}
	if worst > 1e-4 {
		t.Errorf("%s: sampler log-probs differ from a full forward by up to %g", tr.ID, worst)
	}
}

func TestRolloutsLimits(t *testing.T) {
	tok := qwen3Tokenizer(t)
	m := vocabModel(t, tok)
	s, err := sampler.New(m, tok, sampler.Config{Slots: 2, MaxLen: 40})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	examples := []env.Example{
		{ID: "long", Prompt: []chat.Message{{Role: "user", Content: strings.Repeat("word ", 50)}}},
		{ID: "short", Prompt: []chat.Message{{Role: "user", Content: "Hi"}}},
	}
	// max_turns 2 stops an episode that would run 10 turns; the 40-token
	// cache cannot hold the long prompt, and truncates the short one.
	trajs, err := Play(context.Background(), s, tok, echoEnv{turns: 10}, examples, 1, rolloutParams(), 1, Options{MaxTurns: 2})
	if err != nil {
		t.Fatal(err)
	}
	if tr := trajs[0]; len(tr.Errors) != 1 || !strings.Contains(tr.Errors[0], "leaves no room in the cache length 40") || tr.Reward != 0 {
		t.Errorf("long prompt: errors %q, reward %v", tr.Errors, tr.Reward)
	}
	if tr := trajs[1]; tr.Turns != 2 || len(tr.Errors) != 0 {
		t.Errorf("max_turns 2: %d turns, errors %q", tr.Turns, tr.Errors)
	}
	trajs, err = Play(context.Background(), s, tok, echoEnv{turns: 10}, examples[1:], 1, rolloutParams(), 1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr := trajs[0]; !tr.Truncated || tr.Turns < 2 || len(tr.PromptTokens)+len(tr.Tokens) > 40 {
		t.Errorf("cache limit: truncated %v after %d turns, %d tokens", tr.Truncated, tr.Turns, len(tr.PromptTokens)+len(tr.Tokens))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Play(ctx, s, tok, echoEnv{turns: 2}, examples[1:], 1, rolloutParams(), 1, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
	if s.FreeSlots() != 2 {
		t.Errorf("%d free slots after the runs, want 2", s.FreeSlots())
	}
	if _, err := Play(context.Background(), s, tok, echoEnv{turns: 2}, examples, 0, rolloutParams(), 1, Options{}); err == nil || !strings.Contains(err.Error(), "rollouts_per_example = 0") {
		t.Errorf("perExample 0: %v", err)
	}
}
