package trainer

import (
	"context"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
)

// replyBudget is the room a KV cache slot keeps for each environment reply
// in multi-turn episodes.
const replyBudget = 256

// playEpisodes plays perExample episodes of each example on a sampler whose
// KV cache is sized for them: the longest rendered prompt plus max_tokens
// per turn (and room for the replies of multi-turn environments), capped
// by the model's max_position_embeddings.
func playEpisodes(ctx context.Context, m *model.Model, tok *tokenizer.Tokenizer, e env.Environment, exs []env.Example, perExample int, p sampler.Params, seed uint64, thinking *bool, timing *env.RolloutTiming) ([]env.Trajectory, error) {
	longest := 0
	for _, ex := range exs {
		if ids, err := env.RenderPrompt(tok, ex.Prompt, thinking); err == nil {
			longest = max(longest, len(ids))
		}
	}
	turns := 1
	if tl, ok := e.(env.TurnLimiter); ok {
		turns = max(1, tl.MaxTurns())
	}
	s, err := sampler.New(m, tok, sampler.Config{Slots: max(1, len(exs)*perExample), MaxLen: CacheLen(m.Config, longest, p.MaxTokens, turns)})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return env.Rollouts(ctx, s, tok, e, exs, perExample, p, seed, env.RolloutOptions{EnableThinking: thinking, Timing: timing})
}
