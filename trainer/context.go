package trainer

import "github.com/grpo-dev/grpo/rollout"

// checkContext warns, for each training env, when the model's context is
// shorter than its rollouts need (rollout.ContextWarning): they are cut at
// the context rather than failing, so the run goes on.
func (r *run) checkContext() {
	for _, te := range r.envs {
		if w := rollout.ContextWarning(te.name, te.env, r.tok, r.cfg.Sampling.MaxTokens, r.base.Config.MaxPositions, r.cfg.Sampling.EnableThinking); w != "" {
			r.warn("%s", w)
		}
	}
}
