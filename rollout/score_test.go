package rollout

import (
	"context"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/rubric"
	"github.com/grpo-dev/grpo/sampler"
)

// overlapEnv: example "short" ends after one turn; "long" plays on, and
// its second reply waits for the rubric to have scored "short" — which it
// can only if scoring overlaps the play of the episodes still running.
type overlapEnv struct{ scored chan struct{} }

func (overlapEnv) ID() string                             { return "overlap" }
func (overlapEnv) Examples(string) ([]env.Example, error) { return nil, nil }
func (o overlapEnv) NewEpisode(ex env.Example) env.Episode {
	return &overlapEpisode{env: o, id: ex.ID}
}

func (o overlapEnv) Rubric() *rubric.Rubric {
	rb, _ := rubric.Weighted(rubric.Term{Name: "seen", Weight: 1, Func: func(_ context.Context, r rubric.Rollout) (rubric.Score, error) {
		if r.Prompt[0].Content == "short" {
			close(o.scored)
		}
		return rubric.Score{Value: 1}, nil
	}})
	return rb
}

type overlapEpisode struct {
	env overlapEnv
	id  string
	n   int
	// overlapped: the short episode was scored before this one's turn 2
	// ended.
	overlapped bool
}

func (e *overlapEpisode) Respond(context.Context, string) ([]chat.Message, bool, error) {
	e.n++
	if e.id == "short" {
		return nil, true, nil
	}
	if e.n == 2 {
		select {
		case <-e.env.scored:
			return nil, true, nil
		case <-time.After(10 * time.Second):
			return nil, false, errScoredLate
		}
	}
	return []chat.Message{{Role: "user", Content: "go on"}}, false, nil
}

var errScoredLate = errorString("the short episode was not scored while the long one played")

type errorString string

func (e errorString) Error() string { return string(e) }

// TestScoringOverlapsPlay: an episode is scored as soon as it ends, while
// the others still generate and call their environment (item 2 of issue
// 29: CPU-bound rubric work overlaps the device's), and scores are the
// same as scoring after the fact.
func TestScoringOverlapsPlay(t *testing.T) {
	tok := qwen3Tokenizer(t)
	m := vocabModel(t, tok)
	s, err := sampler.New(m, tok, sampler.Config{Slots: 2, MaxLen: 256, PrefillTokens: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o := overlapEnv{scored: make(chan struct{})}
	examples := []env.Example{
		{ID: "short", Prompt: []chat.Message{{Role: "user", Content: "short"}}},
		{ID: "long", Prompt: []chat.Message{{Role: "user", Content: "long"}}},
	}
	trajs, err := Play(context.Background(), s, tok, o, examples, 1, rolloutParams(), 5, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range trajs {
		if len(tr.Errors) != 0 || tr.Reward != 1 {
			t.Errorf("%s: reward %v, errors %q", tr.ID, tr.Reward, tr.Errors)
		}
	}
	if trajs[1].Turns != 2 {
		t.Errorf("long episode played %d turns, want 2", trajs[1].Turns)
	}
}
