package builtins_test

import (
	"context"
	"testing"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/envtest"
)

// TestTurnLimits: the multi-turn builtins report a turn limit that no
// episode exceeds — alphabet-sort's max_turns, and for wordle the longest
// game, every valid guess preceded by an invalid move.
func TestTurnLimits(t *testing.T) {
	sort := envtest.NewEnv(t, "alphabet-sort", map[string]any{"dataset_name": "synthetic", "min_turns": 2, "max_turns": 4})
	if got := sort.(env.TurnLimiter).MaxTurns(); got != 4 {
		t.Errorf("alphabet-sort max_turns 4: MaxTurns = %d", got)
	}
	exs, err := sort.Examples("train")
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range exs[:50] {
		if n := playOut(t, sort.NewEpisode(ex), func(int) string { return "x" }, 100); n > 4 {
			t.Fatalf("alphabet-sort episode took %d turns, more than its limit 4", n)
		}
	}
	w := envtest.NewEnv(t, "wordle", map[string]any{"num_guesses": 3, "words": []any{"crane", "plant", "robot"}})
	limit := w.(env.TurnLimiter).MaxTurns()
	exs, err = w.Examples("train")
	if err != nil {
		t.Fatal(err)
	}
	// Invalid, then a valid wrong guess, alternately: the longest game.
	wrong := []string{"slate", "mound", "fizzy"}
	n := playOut(t, w.NewEpisode(exs[0]), func(turn int) string {
		if turn%2 == 0 {
			return "no guess here"
		}
		return guessTurn(wrong[turn/2])
	}, 100)
	if n != limit || limit != 6 {
		t.Errorf("wordle num_guesses 3: longest game %d turns, MaxTurns %d; want both 6", n, limit)
	}
}

// playOut answers an episode with turn(i) until it ends and returns the
// number of turns, failing past max.
func playOut(t *testing.T, ep env.Episode, turn func(int) string, max int) int {
	t.Helper()
	for i := 0; i < max; i++ {
		_, done, err := ep.Respond(context.Background(), turn(i))
		if err != nil {
			t.Fatal(err)
		}
		if done {
			return i + 1
		}
	}
	t.Fatalf("episode still going after %d turns", max)
	return max
}

// guessTurn is a turn that guesses w in wordle's format.
func guessTurn(w string) string { return "thinking...\n<guess>[" + w + "]</guess>" }
