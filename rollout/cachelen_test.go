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

// sizedEnv declares its replies' room.
type sizedEnv struct {
	echoEnv
	reply int
}

func (s sizedEnv) ReplyTokens() int { return s.reply }

// An environment with long replies (tool results) gets its own room
// between turns; one asking for less than the default keeps the default.
func TestReplyTokens(t *testing.T) {
	mc := &model.Config{MaxPositions: 100000}
	for _, c := range []struct {
		e    sizedEnv
		want int
	}{{sizedEnv{reply: 1024}, 1024}, {sizedEnv{reply: 10}, ReplyBudget}} {
		r := ReplyTokens(c.e)
		if r != c.want {
			t.Errorf("ReplyTokens(%d) = %d, want %d", c.e.reply, r, c.want)
		}
		if got, want := CacheLenReplies(mc, 100, 200, 3, r), 100+600+2*c.want; got != want {
			t.Errorf("CacheLenReplies with %d = %d, want %d", r, got, want)
		}
	}
	if r := ReplyTokens(echoEnv{}); r != ReplyBudget {
		t.Errorf("an environment without ReplySizer: %d", r)
	}
}
