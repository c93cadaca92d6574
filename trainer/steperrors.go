package trainer

import (
	"fmt"
	"strings"

	"github.com/grpo-dev/grpo/rollout"
)

// stepErrors is a step's rollout.Failures, as its step line and the
// max_error_steps check read them.
type stepErrors struct{ rollout.Failures }

func countErrors(trajs []rollout.Trajectory) stepErrors {
	return stepErrors{rollout.CountFailures(trajs)}
}

// all is true for a step in which every rollout failed.
func (s stepErrors) all() bool { return s.Total > 0 && s.Failed == s.Total }

// suffix is what the step line adds when rollouts failed, so a broken
// rubric shows on the screen and not only as "errors" in metrics.jsonl.
func (s stepErrors) suffix() string {
	if s.Failed == 0 {
		return ""
	}
	return fmt.Sprintf("  errors %d/%d rollouts (first: %s)", s.Failed, s.Total, oneLine(s.First, 200))
}

// oneLine keeps an error message to one line of at most n runes.
func oneLine(msg string, n int) string {
	msg = strings.Join(strings.Fields(msg), " ")
	if r := []rune(msg); len(r) > n {
		msg = string(r[:n]) + "…"
	}
	return msg
}

// checkErrorSteps counts consecutive all-error steps (in the health state,
// so a resumed run counts on) and stops the run once there are
// max_error_steps of them: every reward was 0 by failure, so the steps
// train on nothing.
func (r *run) checkErrorSteps(step int, s stepErrors) error {
	r.health.ErrorSteps = bump(r.health.ErrorSteps, s.all())
	limit := r.cfg.MaxErrorSteps
	if limit <= 0 || r.health.ErrorSteps < limit {
		return nil
	}
	if in := r.cfg.Inference; in.On() && s.Generating == s.Failed {
		// The server refused or failed every request: the environment
		// is not at fault, and the server is the one to look at.
		return fmt.Errorf("step %d: every rollout of the last %d steps failed generating on the inference server ([inference] %s; first: %s); check the server's log and limits, or raise max_error_steps (0 never stops)",
			step, r.health.ErrorSteps, serverName(in), oneLine(s.First, 300))
	}
	return fmt.Errorf("step %d: every rollout of the last %d steps failed (first: %s); fix the environment or its rubric ('grpo env score ENV --input FILE' runs the rubric alone), or raise max_error_steps (0 never stops)",
		step, r.health.ErrorSteps, oneLine(s.First, 300))
}
