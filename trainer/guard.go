package trainer

import (
	"fmt"
	"runtime/debug"

	"github.com/grpo-dev/grpo/rundir"
)

// guard runs one step's work (the step, its eval, its checkpoint) and turns
// a panic in it — a bug in grpo, or in an environment's code outside an
// episode, where rollout recovers on its own — into an error that names
// the step and how to go on, with the stack in log.txt. Nothing is saved
// after a panic: the step's state may be half updated, so the last
// checkpoint, written before the step began, is what a resume uses.
func (r *run) guard(step int, f func() error) (err error) {
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		r.dir.Logf("panic in step %d: %v\n%s", step, p, debug.Stack())
		last := "no checkpoint yet, so a resume starts from step 0"
		if steps, _ := rundir.Checkpoints(r.ckDir); len(steps) > 0 {
			last = fmt.Sprintf("checkpoint %s is intact", rundir.CheckpointPath(r.ckDir, steps[len(steps)-1]))
		}
		err = fmt.Errorf("step %d: panic: %v (a bug; the stack is in %s/log.txt); %s: resume with 'grpo train --resume %s'",
			step, p, r.dir.Path, last, r.dir.Path)
	}()
	return f()
}
