package pybridge

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/chat"
)

// playTurns plays an episode's turns (each assistant text, then the
// environment's reply) and returns its completion.
func playTurns(t *testing.T, b *Bridge, ep string, row Row, texts ...string) []chat.Message {
	t.Helper()
	conv := append([]chat.Message(nil), row.Prompt...)
	for i, text := range texts {
		conv = append(conv, chat.Message{Role: "assistant", Content: text})
		in := &row
		if i > 0 {
			in = nil
		}
		r, err := b.Reply(context.Background(), ep, in, conv)
		if err != nil {
			t.Fatalf("%s turn %d: %v", ep, i+1, err)
		}
		conv = append(conv, r.Messages...)
	}
	return conv[len(row.Prompt):]
}

func readLog(t *testing.T, path string) string {
	t.Helper()
	b, _ := os.ReadFile(path)
	return string(b)
}

// a60a606's legacy semantics: the State setup_state returns is the one
// env_response sees; cleanup runs once at each episode's end (done,
// dropped, failed), before scoring; a RubricGroup with a group reward
// function is scored a group at a time, summing its rubrics.
func TestLegacySetupCleanupAndGroupRewards(t *testing.T) {
	log := filepath.Join(t.TempDir(), "cleanup.log")
	b, _ := startEnv(t, "legacy_env", map[string]any{"log": log}, Options{})
	if h := b.Hello(); !h.GroupRewards || h.Generation != "v0" {
		t.Fatalf("hello = %+v, want group rewards from a v0 environment", h)
	}
	ctx := context.Background()
	rows, _ := b.Rows(ctx, "train")
	row := rows[0]
	c1 := playTurns(t, b, "g1", row, "maybe", "yes")
	if c1[1].Content != "fresh" {
		t.Errorf("env_response saw %q: not the State setup_state returned", c1[1].Content)
	}
	playTurns(t, b, "g2", row, "maybe", "yes")
	playTurns(t, b, "g3", row, "maybe", "no")
	if got := readLog(t, log); got != "cleanup maybe yes\ncleanup maybe yes\ncleanup maybe no\n" {
		t.Errorf("cleanup log after three episodes:\n%s", got)
	}
	scores, err := b.ScoreGroup(ctx, []string{"g1", "g2", "g3", "lost"})
	if err != nil {
		t.Fatal(err)
	}
	// correct (weight 1) + unique (0.5): g3's "no" is wrong but unique.
	want := []float64{1, 1, 0.5}
	for i, w := range want {
		s := scores[i]
		if s == nil || s.Reward != w || s.Metrics["cleaned"] != 1 || s.Metrics["num_turns"] != 2 {
			t.Errorf("episode %d: %+v, want reward %v, cleaned 1, num_turns 2", i+1, s, w)
		}
	}
	if scores[3] != nil {
		t.Errorf("an unknown episode got a score: %+v", scores[3])
	}
	if got := readLog(t, log); strings.Count(got, "cleanup") != 3 {
		t.Errorf("cleanup ran again at scoring:\n%s", got)
	}
	// A rollout scored alone is a group of one: its answer is unique.
	s, err := b.Score(ctx, "", row, []chat.Message{{Role: "assistant", Content: "yes"}})
	if err != nil || s.Reward != 1.5 {
		t.Errorf("alone: %+v, %v; want 1.5", s, err)
	}
	// Dropped, and failed, episodes are cleaned up too.
	playTurns(t, b, "d", row, "dropped")
	if err := b.Drop(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	conv := append(append([]chat.Message(nil), row.Prompt...), chat.Message{Role: "assistant", Content: "raise"})
	if _, err := b.Reply(ctx, "f", &row, conv); err == nil || !strings.Contains(err.Error(), "KeyError") {
		t.Errorf("raise: %v", err)
	}
	if got := readLog(t, log); !strings.Contains(got, "cleanup dropped\n") || !strings.HasSuffix(got, "cleanup raise\n") {
		t.Errorf("cleanup log after a drop and a failure:\n%s", got)
	}
}
