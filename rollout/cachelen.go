package rollout

import (
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/model"
)

// ReplyBudget is the room a KV cache slot keeps for each environment reply
// in multi-turn episodes: the reply's messages as the chat template writes
// them, with the next assistant header. The builtins' replies (wordle's
// feedback, alphabet-sort's follow-up lists) fit in it; a longer one ends
// its episode as truncated by the context (TruncatedContext), counted.
const ReplyBudget = 256

// CacheLen is the KV cache length of one rollout with the default reply
// budget: CacheLenReplies with ReplyBudget.
func CacheLen(mc *model.Config, promptTokens, maxTokens, turns int) int {
	return CacheLenReplies(mc, promptTokens, maxTokens, turns, ReplyBudget)
}

// ReplyTokens is the reply room an environment's slots keep between
// turns: its own (env.ReplySizer) when larger than ReplyBudget.
func ReplyTokens(e env.Environment) int {
	if rs, ok := e.(env.ReplySizer); ok {
		return max(ReplyBudget, rs.ReplyTokens())
	}
	return ReplyBudget
}

// CacheLenReplies is the KV cache length of one rollout, as Local sizes
// it: the prompt, then for each of turns model turns max_tokens (a
// per-turn cap) and, between turns, replyTokens for the environment's
// reply (ReplyTokens) — capped by the model's context,
// max_position_embeddings.
func CacheLenReplies(mc *model.Config, promptTokens, maxTokens, turns, replyTokens int) int {
	turns = max(turns, 1)
	n := promptTokens + maxTokens*turns + replyTokens*(turns-1)
	if mc.MaxPositions > 0 {
		n = min(n, mc.MaxPositions)
	}
	return max(n, 1)
}
