package rollout

import (
	"fmt"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/tokenizer"
)

// contextSample is how many train examples per environment are rendered to
// find the longest prompt: enough to see the typical length without
// rendering a large dataset at start-up.
const contextSample = 64

// ContextWarning is the warning for environment e (name, as the run calls
// it) when the model's context ctx (max_position_embeddings) is shorter
// than a rollout needs: the longest sampled prompt plus maxTokens for each
// model turn; "" when it fits, or when ctx or the prompts are unknown.
// Play caps each KV cache slot at the context (CacheLen), so such
// completions are cut short (and reward the truncation) rather than
// failing; a run can go on, so it is a warning and not an error.
func ContextWarning(name string, e env.Environment, tok *tokenizer.Tokenizer, maxTokens, ctx int, enableThinking *bool) string {
	if ctx <= 0 {
		return ""
	}
	exs, err := e.Examples("train")
	if err != nil {
		return "" // the run has read the split already; nothing new to say here
	}
	longest := 0
	for _, ex := range exs[:min(len(exs), contextSample)] {
		if ids, err := RenderPrompt(tok, ex.Prompt, enableThinking); err == nil {
			longest = max(longest, len(ids))
		}
	}
	turns := 1
	if tl, ok := e.(env.TurnLimiter); ok {
		turns = max(1, tl.MaxTurns())
	}
	need := longest + maxTokens*turns
	switch {
	case longest == 0 || need <= ctx:
	case longest >= ctx:
		return fmt.Sprintf("env %s: its longest prompt (%d tokens, of the first %d examples) does not fit the model's max_position_embeddings = %d, so its rollouts fail; shorten the prompts (system prompt, example text) or use a model with a longer context",
			name, longest, min(len(exs), contextSample), ctx)
	default:
		return fmt.Sprintf("env %s: its longest prompt (%d tokens, of the first %d examples) + [sampling] max_tokens = %d × %d turn(s) is %d tokens, beyond the model's max_position_embeddings = %d: completions will be cut at the context; lower max_tokens to at most %d or shorten the prompts",
			name, longest, min(len(exs), contextSample), maxTokens, turns, need, ctx, (ctx-longest)/turns)
	}
	return ""
}
