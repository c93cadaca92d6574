package rollout

import (
	"context"
	"slices"
	"testing"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/sampler"
)

// TestPlayQueuesWithinTheCachePool: with a pool of blocks for only two
// worst-case episodes (and slots for all six), episodes wait for blocks
// and play the same multi-turn trajectories as with a pool for all of
// them at once, with and without prefix sharing.
func TestPlayQueuesWithinTheCachePool(t *testing.T) {
	tok := qwen3Tokenizer(t)
	m := vocabModel(t, tok)
	examples := []env.Example{
		{ID: "a", Prompt: []chat.Message{{Role: "system", Content: "Echo game."}, {Role: "user", Content: "Say something."}}},
		{ID: "b", Prompt: []chat.Message{{Role: "user", Content: "Say more."}}},
		{ID: "c", Prompt: []chat.Message{{Role: "user", Content: "Go."}}},
	}
	play := func(cfg sampler.Config) []Trajectory {
		t.Helper()
		s, err := sampler.New(m, tok, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		trajs, err := Play(context.Background(), s, tok, echoEnv{turns: 3}, examples, 2, rolloutParams(), 17, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if c := s.Cache(); c.FreeBlocks() != c.NumBlocks {
			t.Fatalf("%d of %d blocks free after Play", c.FreeBlocks(), c.NumBlocks)
		}
		return trajs
	}
	all := sampler.Config{Slots: 6, MaxLen: 256, PrefillTokens: 64}
	want := play(all)
	tight := all
	tight.Blocks = 2 * 256 / sampler.DefaultBlockSize // two episodes' worst case
	for _, share := range []bool{true, false} {
		tight.NoPrefixSharing = !share
		got := play(tight)
		for i := range want {
			if !slices.Equal(got[i].Tokens, want[i].Tokens) || got[i].Turns != want[i].Turns {
				t.Errorf("sharing %v: trajectory %d: %d turns %v, want %d turns %v", share, i, got[i].Turns, got[i].Tokens, want[i].Turns, want[i].Tokens)
			}
		}
	}
}
