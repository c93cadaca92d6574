package rollout

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/rubric"
	"github.com/grpo-dev/grpo/sampler"
)

// TestOverlapPlaysTheSameRollouts: two cohorts taking turns on the device
// generate, episode by episode, the tokens lock step generates (the
// batches differ, the per-episode seeds do not), with the same replies,
// failures and rewards; log-probs agree to the batch's rounding.
func TestOverlapPlaysTheSameRollouts(t *testing.T) {
	examples := []env.Example{
		{ID: "a", Prompt: []chat.Message{{Role: "system", Content: "Echo game."}, {Role: "user", Content: "Say something."}}},
		{ID: "fail", Prompt: []chat.Message{{Role: "user", Content: "Say more."}}},
		{ID: "panic", Prompt: []chat.Message{{Role: "user", Content: "Go."}}},
		{ID: "b", Prompt: []chat.Message{{Role: "user", Content: "Once more."}}},
		{ID: "c", Prompt: []chat.Message{{Role: "user", Content: "And again."}}},
	}
	for _, e := range []env.Environment{echoEnv{turns: 3}, unevenEnv{}} {
		compareOverlap(t, e, examples)
	}
}

// unevenEnv ends an episode when its turn's text has a length divisible
// by 3, or after four turns, so that episodes of one group end at
// different turns and new groups join a cohort whose replies are still
// running.
type unevenEnv struct{}

func (unevenEnv) ID() string                             { return "uneven" }
func (unevenEnv) Examples(string) ([]env.Example, error) { return nil, nil }
func (unevenEnv) NewEpisode(env.Example) env.Episode     { return &unevenEpisode{} }
func (unevenEnv) Rubric() *rubric.Rubric                 { return turnsRubric }

type unevenEpisode struct{ n int }

func (e *unevenEpisode) Respond(_ context.Context, text string) ([]chat.Message, bool, error) {
	e.n++
	if len(text)%3 == 0 || e.n >= 4 {
		return nil, true, nil
	}
	return []chat.Message{{Role: "user", Content: "more"}}, false, nil
}

func compareOverlap(t *testing.T, e env.Environment, examples []env.Example) {
	tok := qwen3Tokenizer(t)
	m := vocabModel(t, tok)
	play := func(overlap bool) ([]Trajectory, Timing) {
		// Five slots for ten episodes: later groups start as earlier end.
		s, err := sampler.New(m, tok, sampler.Config{Slots: 5, MaxLen: 256, PrefillTokens: 64})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var tm Timing
		trajs, err := Play(context.Background(), s, tok, e, examples, 2, rolloutParams(), 17, Options{Overlap: overlap, Timing: &tm})
		if err != nil {
			t.Fatal(err)
		}
		if s.FreeSlots() != 5 {
			t.Errorf("%s, overlap %v: %d free slots after Play, want 5", e.ID(), overlap, s.FreeSlots())
		}
		return trajs, tm
	}
	lock, lockTime := play(false)
	over, overTime := play(true)
	for i := range lock {
		a, b := lock[i], over[i]
		checkPartition(t, tok, b)
		checkTemplate(t, tok, b)
		checkLogprobs(t, m, b)
		if !slices.Equal(a.Tokens, b.Tokens) || a.Turns != b.Turns || a.Reward != b.Reward || !slices.Equal(a.Errors, b.Errors) || len(a.Messages) != len(b.Messages) {
			t.Errorf("%s episode %d (%s): overlapped %d turns %v reward %v errors %q; lock step %d turns %v reward %v errors %q",
				e.ID(), i, a.ID, b.Turns, b.Tokens, b.Reward, b.Errors, a.Turns, a.Tokens, a.Reward, a.Errors)
			continue
		}
		for j := range a.Logprobs {
			if d := math.Abs(float64(a.Logprobs[j] - b.Logprobs[j])); d > 1e-5 {
				t.Errorf("%s episode %d token %d: log-prob %v overlapped, %v in lock step", e.ID(), i, j, b.Logprobs[j], a.Logprobs[j])
			}
		}
	}
	for name, tm := range map[string]Timing{"lock step": lockTime, "overlapped": overTime} {
		if tm.Generate <= 0 || tm.Respond <= 0 || tm.Generate+tm.Respond > 2*tm.Play {
			t.Errorf("%s, %s: timing %+v", e.ID(), name, tm)
		}
	}
}

// waitingEnv: example "x"'s first reply waits for example "y" to have been
// replied to, which in lock step cannot happen (the replies of one turn
// are asked one after another, x's first) and with Overlap must (y
// generates in the other cohort while x's reply runs).
type waitingEnv struct {
	yReplied chan struct{}
	wait     time.Duration
}

func (waitingEnv) ID() string                             { return "waiting" }
func (waitingEnv) Examples(string) ([]env.Example, error) { return nil, nil }
func (w waitingEnv) NewEpisode(ex env.Example) env.Episode {
	return &waitingEpisode{env: w, id: ex.ID}
}
func (waitingEnv) Rubric() *rubric.Rubric { return turnsRubric }

type waitingEpisode struct {
	env waitingEnv
	id  string
	n   int
}

func (e *waitingEpisode) Respond(context.Context, string) ([]chat.Message, bool, error) {
	e.n++
	switch {
	case e.id == "y":
		close(e.env.yReplied)
		return nil, true, nil
	case e.n == 1:
		select {
		case <-e.env.yReplied:
			return []chat.Message{{Role: "user", Content: "thanks"}}, false, nil
		case <-time.After(e.env.wait):
			return nil, false, errorString("y was not replied to while x's reply ran")
		}
	}
	return nil, true, nil
}

// TestOverlapHidesReplies: with Overlap, one cohort generates while the
// other's replies run; in lock step the device waits for every reply.
func TestOverlapHidesReplies(t *testing.T) {
	tok := qwen3Tokenizer(t)
	m := vocabModel(t, tok)
	examples := []env.Example{
		{ID: "x", Prompt: []chat.Message{{Role: "user", Content: "first"}}},
		{ID: "y", Prompt: []chat.Message{{Role: "user", Content: "second"}}},
	}
	for _, overlap := range []bool{true, false} {
		s, err := sampler.New(m, tok, sampler.Config{Slots: 2, MaxLen: 256, PrefillTokens: 64})
		if err != nil {
			t.Fatal(err)
		}
		w := waitingEnv{yReplied: make(chan struct{}), wait: 10 * time.Second}
		if !overlap {
			w.wait = 300 * time.Millisecond // it cannot come: fail soon
		}
		trajs, err := Play(context.Background(), s, tok, w, examples, 1, rolloutParams(), 5, Options{Overlap: overlap})
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		x := trajs[0]
		if overlapped := len(x.Errors) == 0 && x.Turns == 2; overlapped != overlap {
			t.Errorf("overlap %v: x played %d turns, errors %q", overlap, x.Turns, x.Errors)
		}
	}
}

// TestOverlapPays: replies of a quarter of the generation time or more
// pay, if they took at least overlapMinRespond; a Play that generated
// nothing never does.
func TestOverlapPays(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		gen, respond time.Duration
		want         bool
	}{{1000 * ms, 249 * ms, false}, {1000 * ms, 250 * ms, true}, {100 * ms, 300 * ms, true}, {0, 200 * ms, false},
		{400 * ms, 99 * ms, false}, {400 * ms, 100 * ms, true}, {100 * time.Microsecond, 30 * time.Microsecond, false}} {
		if got := OverlapPays(Timing{Generate: c.gen, Respond: c.respond}); got != c.want {
			t.Errorf("generate %v, respond %v: %v", c.gen, c.respond, got)
		}
	}
}
