package rollout

import (
	"testing"

	"github.com/grpo-dev/grpo/model"
)

// A prompt longer than the context is capped by max_position_embeddings,
// and multi-turn episodes get max_tokens per turn plus reply room.
func TestCacheLen(t *testing.T) {
	mc := &model.Config{MaxPositions: 2000}
	for _, c := range []struct{ prompt, maxTok, turns, want int }{
		{100, 200, 1, 300}, {100, 200, 3, 100 + 600 + 2*ReplyBudget}, {1900, 200, 1, 2000}, {0, 0, 0, 1},
	} {
		if got := CacheLen(mc, c.prompt, c.maxTok, c.turns); got != c.want {
			t.Errorf("CacheLen(%d, %d, %d) = %d, want %d", c.prompt, c.maxTok, c.turns, got, c.want)
		}
	}
}
