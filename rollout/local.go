package rollout

import (
	"context"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
)

// Local plays perExample episodes of each example, as Play does, on a
// sampler over m whose KV cache is sized for them: one slot per episode,
// each CacheLen of the longest rendered prompt and e's turn limit
// (env.TurnLimiter; one turn without it). The prompts rendered for the
// sizing are the ones the episodes start with.
func Local(ctx context.Context, m *model.Model, tok *tokenizer.Tokenizer, e env.Environment, exs []env.Example, perExample int, p sampler.Params, seed uint64, opts Options) ([]Trajectory, error) {
	prompts := renderPrompts(tok, exs, tokenizer.ChatOptions{EnableThinking: opts.EnableThinking})
	longest := 0
	for _, pr := range prompts {
		if pr.err == nil {
			longest = max(longest, len(pr.ids))
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
	if err := checkArgs(s, tok, e, perExample, opts); err != nil {
		return nil, err
	}
	return play(ctx, s, tok, e, exs, prompts, perExample, p, seed, opts)
}
