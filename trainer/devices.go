package trainer

import (
	"context"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/trainer/replicas"
	"github.com/grpo-dev/grpo/update"
)

// openReplicas makes the run's replicas on its layout (replicas.OpenRun):
// the first is the run's own (policy, adapter, opt, engine); with several
// devices the others are copies of it and each step's update is data
// parallel, or under expert parallelism the first is rank 0 and the
// others hold the other shares of the experts (restored from the
// checkpoint the run resumed from). The rollouts are played across them.
// Checkpoints, evals and the final adapter are written once.
func (r *run) openReplicas(ctx context.Context, ids []kernels.DeviceID) error {
	first := replicas.Replica{Backend: r.be, Policy: update.Policy{Model: r.policy, Adapter: r.adapter, Optimizer: r.opt}, Engine: r.engine}
	reps, err := replicas.OpenRun(ctx, r.layout, replicas.Spec{Devices: ids, Backends: r.opts.replicaBackends, First: first, Model: r.cfg.Model, Optimizer: r.cfg.Optimizer,
		LoRA: r.cfg.LoRA, Seed: r.seed, Checkpoint: r.resumed, World: r.world,
		Tok: r.tok, EnableThinking: r.cfg.Sampling.EnableThinking, PerCall: r.opts.samplerPerCall, Log: func(line string) { r.dir.Logf("%s", line) }})
	if err != nil {
		return err
	}
	if r.reps = reps; reps.Len() > 1 || r.world != nil {
		r.engine = reps
	}
	return nil
}
