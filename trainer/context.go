package trainer

import "github.com/grpo-dev/grpo/rollout"

// checkContext warns of a reasoning_effort the chat template does not read
// and, per training env, of a context shorter than its rollouts need
// (rollout.ContextWarning): they are cut at it and the run goes on.
func (r *run) checkContext() {
	for _, w := range []string{r.tok.ReasoningEffortWarning("[sampling] reasoning_effort", r.cfg.Sampling.ReasoningEffort), r.tok.ReasoningEffortWarning("[eval.sampling] reasoning_effort", r.cfg.Eval.Sampling.ReasoningEffort)} {
		if w != "" {
			r.warn("%s", w)
		}
	}
	for _, te := range r.envs {
		if w := rollout.ContextWarning(te.name, te.env, r.tok, r.cfg.Sampling.MaxTokens, r.base.Config.MaxPositions, r.cfg.Sampling.EnableThinking); w != "" {
			r.warn("%s", w)
		}
	}
}
