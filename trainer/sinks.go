package trainer

import (
	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/rundir"
)

// openSinks opens where the run's metrics go: metrics.jsonl and
// eval.jsonl, a TensorBoard events file, and W&B when [wandb] is on. The
// line saying where W&B's copy went (online, or offline and why) is shown
// like a warning, never swallowed.
func (r *run) openSinks() error {
	var err error
	r.sinks, err = rundir.OpenSinks(r.dir, rundir.SinkOptions{
		RunName: r.cfg.Name, Wandb: wandbSettings(r.cfg.Wandb), WandbConfig: r.cfg,
		Resumed: r.opts.resume, Step: r.step,
		Notify: func(line string) { r.bar.note("%s", line) },
	})
	return err
}

// wandbSettings is the [wandb] section as rundir takes it.
func wandbSettings(w config.Wandb) rundir.Wandb {
	return rundir.Wandb{On: w.On(), Project: w.Project, Entity: w.Entity, Name: w.Name,
		Group: w.Group, Tags: w.Tags, Offline: w.Offline}
}
