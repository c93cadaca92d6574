package trainer

import (
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/rollout"
)

// contextSample is how many train examples per environment are rendered to
// find the longest prompt: enough to see the typical length without
// rendering a large dataset at start-up.
const contextSample = 64

// checkContext warns when the model's context (max_position_embeddings)
// is shorter than a rollout needs: the longest sampled prompt plus
// [sampling] max_tokens for each model turn. rollout caps each KV cache
// slot at the context, so such completions are cut short (and reward the
// truncation) rather than failing; the run can go on, so it is a warning.
func (r *run) checkContext() {
	ctx := r.base.Config.MaxPositions
	if ctx <= 0 {
		return
	}
	maxTokens := r.cfg.Sampling.MaxTokens
	for _, te := range r.envs {
		exs, err := te.env.Examples("train")
		if err != nil {
			continue // setupEnvs has read it already; nothing new to say here
		}
		longest := 0
		for _, ex := range exs[:min(len(exs), contextSample)] {
			if ids, err := rollout.RenderPrompt(r.tok, ex.Prompt, r.cfg.Sampling.EnableThinking); err == nil {
				longest = max(longest, len(ids))
			}
		}
		turns := 1
		if tl, ok := te.env.(env.TurnLimiter); ok {
			turns = max(1, tl.MaxTurns())
		}
		need := longest + maxTokens*turns
		switch {
		case longest == 0 || need <= ctx:
		case longest >= ctx:
			r.warn("env %s: its longest prompt (%d tokens, of the first %d examples) does not fit the model's max_position_embeddings = %d, so its rollouts fail; shorten the prompts (system prompt, example text) or use a model with a longer context",
				te.name, longest, min(len(exs), contextSample), ctx)
		default:
			r.warn("env %s: its longest prompt (%d tokens, of the first %d examples) + [sampling] max_tokens = %d × %d turn(s) is %d tokens, beyond the model's max_position_embeddings = %d: completions will be cut at the context; lower max_tokens to at most %d or shorten the prompts",
				te.name, longest, min(len(exs), contextSample), maxTokens, turns, need, ctx, (ctx-longest)/turns)
		}
	}
}
