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
// each CacheLen of the longest rendered prompt and the turns an episode
// can take (sizingTurns), and a pool of blocks for all of them at once or
// opts.KVBlocks (then episodes queue until blocks free up). An example's
// episodes share its prompt's blocks: it is prefilled once. The prompts
// rendered for the sizing are the ones the episodes start with.
func Local(ctx context.Context, m *model.Model, tok *tokenizer.Tokenizer, e env.Environment, exs []env.Example, perExample int, p sampler.Params, seed uint64, opts Options) ([]Trajectory, error) {
	c, err := sizeLocal(m, tok, e, exs, perExample, p, opts)
	if err != nil {
		return nil, err
	}
	s, err := sampler.New(m, tok, c.cfg)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return c.play(ctx, s, tok, e, exs, perExample, p, seed, opts)
}

// localCall is one Local call's prompts and the sampler sized for them.
type localCall struct {
	st      setup
	prompts []prompt
	cfg     sampler.Config
}

// sizeLocal renders the prompts and sizes the sampler as Local's doc says.
func sizeLocal(m *model.Model, tok *tokenizer.Tokenizer, e env.Environment, exs []env.Example, perExample int, p sampler.Params, opts Options) (localCall, error) {
	st, err := newSetup(tok, e, opts)
	if err != nil {
		return localCall{}, err
	}
	prompts := renderPrompts(tok, exs, st.chat)
	longest := 0
	for _, pr := range prompts {
		if pr.err == nil {
			longest = max(longest, len(pr.ids))
		}
	}
	if ag, ok := e.(env.AgentProgram); ok {
		// An agent's prompt is its program's first call, unknown until it
		// runs: the environment says how much room to keep for it.
		longest = max(longest, ag.Agent().PromptTokens)
	}
	turns := sizingTurns(e, opts.MaxTurns)
	maxLen := CacheLenReplies(m.Config, longest, p.MaxTokens, turns, ReplyTokens(e))
	blocks := opts.KVBlocks
	if blocks > 0 {
		// A plan made for shorter prompts still runs one episode at a time.
		blocks = max(blocks, sampler.GroupBlocks(longest, 1, maxLen, sampler.DefaultBlockSize, false))
	}
	return localCall{st: st, prompts: prompts, cfg: sampler.Config{Slots: max(1, len(exs)*perExample, opts.Slots), MaxLen: maxLen,
		Blocks: blocks, NoPrefixSharing: opts.NoPrefixSharing, RecordExperts: opts.RecordExperts}}, nil
}

// play plays the call's episodes on s, sized by sizeLocal.
func (c localCall) play(ctx context.Context, s *sampler.Sampler, tok *tokenizer.Tokenizer, e env.Environment, exs []env.Example, perExample int, p sampler.Params, seed uint64, opts Options) ([]Trajectory, error) {
	if err := checkArgs(s, tok, e, perExample, opts); err != nil {
		return nil, err
	}
	return play(ctx, runnerOf(samplerRunner{s}), tok, e, exs, c.prompts, perExample, p, seed, opts, c.st)
}

// sizingTurns is how many model turns a slot is sized for: e's turn limit
// (env.TurnLimiter), lowered to the MaxTurns cap when one is set; the cap
// alone for an environment without a limit; else one turn. An episode
// longer than that ends truncated by the context, and is counted.
func sizingTurns(e env.Environment, maxTurns int) int {
	turns := maxTurns
	if tl, ok := e.(env.TurnLimiter); ok && tl.MaxTurns() > 0 {
		turns = tl.MaxTurns()
		if maxTurns > 0 {
			turns = min(turns, maxTurns)
		}
	}
	return max(1, turns)
}
