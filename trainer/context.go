package trainer

import (
	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/rollout"
)

// checkContext warns, for each training env, when the model's context is
// shorter than its rollouts need (rollout.ContextWarning): they are cut at
// the context rather than failing, so the run goes on. It also warns when
// reasoning_effort is set for a model whose chat template does not read it.
func (r *run) checkContext() {
	for _, e := range []struct{ key, effort string }{
		{"[sampling] reasoning_effort", r.cfg.Sampling.ReasoningEffort},
		{"[eval.sampling] reasoning_effort", r.cfg.Eval.Sampling.ReasoningEffort},
	} {
		if e.effort != "" && !r.tok.TemplateReads(chat.ReasoningEffortVar) {
			r.warn("%s", chat.ReasoningEffortUnread(e.key, e.effort))
		}
	}
	for _, te := range r.envs {
		if w := rollout.ContextWarning(te.name, te.env, r.tok, r.cfg.Sampling.MaxTokens, r.base.Config.MaxPositions, r.cfg.Sampling.EnableThinking); w != "" {
			r.warn("%s", w)
		}
	}
}
