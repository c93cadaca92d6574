package trainer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/rundir"
)

// resumeState restores the newest intact checkpoint of the run. A
// damaged one (a torn state.json, a missing or corrupt adapter or
// optimizer file) is passed over with a warning for the one before it; a
// run with no intact checkpoint (killed before its first) starts again
// from step 0 with its saved config, which is exactly what it ran before.
func (r *run) resumeState() error {
	steps, err := rundir.Checkpoints(r.ckDir)
	if err != nil {
		return err
	}
	for i := len(steps) - 1; i >= 0; i-- {
		path := rundir.CheckpointPath(r.ckDir, steps[i])
		st, err := r.loadResumable(path, steps[i])
		if err == nil {
			return r.continueFrom(path, st)
		}
		if _, bound := err.(*boundError); bound {
			return err
		}
		r.warn("checkpoint %s is damaged (%v); resuming from the one before it", path, err)
	}
	if len(steps) > 0 {
		r.warn("no intact checkpoint in %s; starting %s again from step 0", r.ckDir, r.dir.Path)
	} else {
		r.dir.Logf("no checkpoint yet: starting %s again from step 0 with its config.toml", r.dir.Path)
	}
	for _, name := range []string{"metrics.jsonl", "eval.jsonl"} {
		if err := r.dir.TruncateAfter(name, -1); err != nil {
			return err
		}
	}
	return r.freshState()
}

// boundError is a checkpoint that is intact but does not belong to the
// config: falling back to an older one would not help.
type boundError struct{ msg string }

func (e *boundError) Error() string { return e.msg }

// loadResumable loads the checkpoint at path into r (adapter, optimizer)
// and checks that it belongs to r's config.
func (r *run) loadResumable(path string, step int) (checkpointState, error) {
	ad, st, err := loadCheckpoint(path, step, r.base)
	if err != nil {
		return st, err
	}
	if err := r.checkConfigEdits(path); err != nil {
		return st, err
	}
	if st.Seed != r.seed || len(st.Cursors) != len(r.envs) {
		return st, &boundError{fmt.Sprintf("checkpoint %s was written with another seed or environment list than %s/config.toml", path, r.dir.Path)}
	}
	r.adapter = ad
	if err := r.newOptimizer(); err != nil {
		return st, err
	}
	if err := r.opt.LoadState(filepath.Join(path, "optimizer.safetensors")); err != nil {
		return st, err
	}
	return st, nil
}

// continueFrom sets the run's position to the checkpoint's and drops the
// log lines of steps after it, which the resumed run logs again.
func (r *run) continueFrom(path string, st checkpointState) error {
	r.step, r.health, r.resumed = st.Step, st.Health, path
	r.maxPerStep = max(r.maxPerStep, st.MaxExamplesPerStep)
	copy(r.sched.Cursors, st.Cursors)
	if len(st.Overlap) == len(r.overlap.On) {
		copy(r.overlap.On, st.Overlap)
	}
	if r.pools != nil && st.Pools != nil {
		if err := r.pools.Restore(st.Pools, r.seed, st.Step); err != nil {
			return fmt.Errorf("checkpoint %s: state.json: %w", path, err)
		}
	}
	rows, err := rundir.ReadJSONL(filepath.Join(r.dir.Path, "metrics.jsonl"))
	if err != nil {
		return err
	}
	logged := map[int]bool{}
	for _, row := range rows {
		if s, ok := row["step"].(float64); ok && int(s) >= 1 && int(s) <= st.Step {
			logged[int(s)] = true
		}
	}
	if len(logged) < st.Step {
		// The adapter and optimizer are whole, so the run can go on; only
		// the record of some steps is gone.
		r.warn("metrics.jsonl holds %d of the %d steps checkpoint %s covers: the missing steps' metrics are lost (plots and 'grpo runs status' show a gap); training resumes from step %d",
			len(logged), st.Step, path, st.Step)
	}
	for _, name := range []string{"metrics.jsonl", "eval.jsonl"} {
		if err := r.dir.TruncateAfter(name, r.step); err != nil {
			return err
		}
	}
	r.dir.Logf("resumed from %s", path)
	return nil
}

// checkConfigEdits compares config.toml as it is now with the copy the
// checkpoint recorded. Edits of keys a checkpoint is bound to (model,
// seed, [lora], [[env]], rollouts_per_example) are refused: the checkpoint
// would be applied to a run it does not belong to. Other edits (a higher
// max_steps to train longer, another lr or eval interval) are what a user
// resumes for, so they are allowed with a warning that names them.
func (r *run) checkConfigEdits(path string) error {
	saved, err := os.ReadFile(filepath.Join(path, "config.toml"))
	if err != nil || r.opts.configText == nil {
		return nil // a checkpoint from before configs were recorded, or a Go caller with no file
	}
	changes, err := config.Diff(saved, r.opts.configText)
	if err != nil || len(changes) == 0 {
		return nil
	}
	bound, other := config.SplitByCheckpoint(changes)
	if len(bound) > 0 {
		return &boundError{fmt.Sprintf("%s/config.toml was edited since checkpoint %s was written (%s), and the checkpoint cannot continue under that change; undo the edit (the checkpoint's copy is %s), or train the edited config as a new run with 'grpo train CONFIG --output NEW_DIR'",
			r.dir.Path, path, strings.Join(bound, "; "), filepath.Join(path, "config.toml"))}
	}
	r.warn("%s/config.toml was edited since checkpoint %s was written (%s); the resumed run follows the edited values, so it no longer matches an uninterrupted run of the original",
		r.dir.Path, path, strings.Join(other, "; "))
	return nil
}

// freshState is a new run's adapter and optimizer.
func (r *run) freshState() error {
	var err error
	if r.adapter, err = lora.New(r.base, r.cfg.LoRA, r.seed); err != nil {
		return err
	}
	return r.newOptimizer()
}

// warn logs a warning and queues it for the progress display, which
// starts after setup.
func (r *run) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.dir.Logf("warning: %s", msg)
	r.notes = append(r.notes, "warning: "+msg)
}
