package trainer

import (
	"context"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/trainer/replicas"
	"github.com/grpo-dev/grpo/update"
)

// openReplicas makes the run's replicas, one per device: the first is
// the run's own (policy, adapter, opt, engine); with several devices the
// others are copies of it (trainer/replicas), the rollouts are played
// across them and each step's update is data parallel. Checkpoints,
// evals and the final adapter are the first replica's, written once.
func (r *run) openReplicas(ctx context.Context, ids []kernels.DeviceID) error {
	first := replicas.Replica{Backend: r.be, Policy: update.Policy{Model: r.policy, Adapter: r.adapter, Optimizer: r.opt}, Engine: r.engine}
	if len(ids) == 1 && len(r.opts.replicaBackends) == 0 && r.world == nil {
		r.reps = replicas.One(first)
		return nil
	}
	reps, err := replicas.Open(ctx, replicas.Spec{Devices: ids, Backends: r.opts.replicaBackends, First: first, Model: r.cfg.Model, Optimizer: r.cfg.Optimizer,
		Tok: r.tok, EnableThinking: r.cfg.Sampling.EnableThinking, PerCall: r.opts.samplerPerCall, World: r.world, Log: func(line string) { r.dir.Logf("%s", line) }})
	if err != nil {
		return err
	}
	r.reps, r.engine = reps, reps
	r.dir.Logf("data parallel over %s: a replica of the model, adapter and optimizer on each", reps.Devices())
	return nil
}
