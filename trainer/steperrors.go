package trainer

import (
	"fmt"

	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/trainer/health"
)

// checkErrorSteps counts consecutive all-error steps (in the health state,
// so a resumed run counts on) and stops the run once there are
// max_error_steps of them: every reward was 0 by failure, so the steps
// train on nothing.
func (r *run) checkErrorSteps(step int, s rollout.Failures) error {
	r.health.ErrorSteps = health.Bump(r.health.ErrorSteps, s.All())
	limit := r.cfg.MaxErrorSteps
	if limit <= 0 || r.health.ErrorSteps < limit {
		return nil
	}
	if in := r.cfg.Inference; in.On() && s.Generating == s.Failed {
		// The server refused or failed every request: the environment
		// is not at fault, and the server is the one to look at.
		return fmt.Errorf("step %d: every rollout of the last %d steps failed generating on the inference server ([inference] %s; first: %s); check the server's log and limits, or raise max_error_steps (0 never stops)",
			step, r.health.ErrorSteps, serverName(in), s.FirstLine(300))
	}
	return fmt.Errorf("step %d: every rollout of the last %d steps failed (first: %s); fix the environment or its rubric ('grpo env score ENV --input FILE' runs the rubric alone), or raise max_error_steps (0 never stops)",
		step, r.health.ErrorSteps, s.FirstLine(300))
}
