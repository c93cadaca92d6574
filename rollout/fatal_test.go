package rollout

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/rubric"
	"github.com/grpo-dev/grpo/sampler"
)

// downEnv's episodes fail as an environment that is down does: with an
// error wrapping env.ErrFatal on the first turn of example "down".
type downEnv struct{}

func (downEnv) ID() string                             { return "down" }
func (downEnv) Examples(string) ([]env.Example, error) { return nil, nil }
func (downEnv) Rubric() *rubric.Rubric                 { return turnsRubric }
func (downEnv) NewEpisode(ex env.Example) env.Episode  { return downEpisode(ex.ID) }

type downEpisode string

func (e downEpisode) Respond(context.Context, string) ([]chat.Message, bool, error) {
	if e == "down" {
		return nil, false, fmt.Errorf("env down: its python child died 3 times: %w", env.ErrFatal)
	}
	return nil, true, nil
}

func TestRolloutsStopOnFatalEnvironment(t *testing.T) {
	tok := qwen3Tokenizer(t)
	s, err := sampler.New(vocabModel(t, tok), tok, sampler.Config{Slots: 2, MaxLen: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	examples := []env.Example{
		{ID: "up", Prompt: []chat.Message{{Role: "user", Content: "Hi"}}},
		{ID: "down", Prompt: []chat.Message{{Role: "user", Content: "Hi"}}},
	}
	if _, err := Play(context.Background(), s, tok, downEnv{}, examples[:1], 2, rolloutParams(), 1, Options{}); err != nil {
		t.Fatalf("a working environment: %v", err)
	}
	_, err = Play(context.Background(), s, tok, downEnv{}, examples, 2, rolloutParams(), 1, Options{})
	if !errors.Is(err, env.ErrFatal) || !strings.Contains(err.Error(), "died 3 times") {
		t.Errorf("Play = %v, want the environment's fatal error", err)
	}
	if s.FreeSlots() != 2 {
		t.Errorf("%d free slots after the failed Play, want 2", s.FreeSlots())
	}
}
