package rollout

import "github.com/grpo-dev/grpo/model"

// replyBudget is the room a KV cache slot keeps for each environment reply
// in multi-turn episodes.
const replyBudget = 256

// CacheLen is the KV cache length of one rollout, as Local sizes it: the
// prompt, max_tokens per model turn and a reply budget between turns,
// capped by max_position_embeddings.
func CacheLen(mc *model.Config, promptTokens, maxTokens, turns int) int {
	turns = max(turns, 1)
	n := promptTokens + maxTokens*turns + replyBudget*(turns-1)
	if mc.MaxPositions > 0 {
		n = min(n, mc.MaxPositions)
	}
	return max(n, 1)
}
