package trainer

import (
	"github.com/grpo-dev/grpo/estimate"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/sampler"
)

// planKVPool sizes the sampler's KV pool for the run's rollouts from the
// device's free memory, as grpo estimate plans it (estimate.KVPlan, with
// the training envs' prompts rendered by the model's tokenizer): 0 (every
// rollout's worst case at once) unless that does not fit, and then the
// blocks that do, the rest of a step's rollouts waiting for blocks
// (rollout.Options.KVBlocks). The free memory is the one read before the
// weights loaded (recompute = "auto" reads it), or else what is free now
// with the estimate's resident items (the weights, adapter and optimizer,
// loaded by now) added back. Unknown free memory leaves the pool
// unbounded, as before; rollouts on an inference server ([inference])
// have no local pool to plan.
//
// It also decides whether the sampler stays allocated through the policy
// update (estimate.KeepSampler: its KV pool and decode workspaces and
// training fit the free memory together), and logs the decision: a kept sampler reuses its
// pool and decode graphs at the next step.
func (r *run) planKVPool() {
	if r.cfg.Inference.On() {
		return
	}
	e, av := estimate.ForRun(r.cfg, r.base.Config, r.be, r.trainShapes(), r.freeMemory, r.layout.EP)
	if e == nil {
		r.keepSampler = true
		r.dir.Logf("sampler: kept across steps: no memory plan (free memory unknown)")
		return
	}
	k := e.KeepSampler(av)
	r.keepSampler = k.Keep
	r.dir.Logf("sampler: %s", k.Why)
	for _, p := range e.KV {
		if p.Phase != estimate.PhaseSampling {
			continue
		}
		if p.Bounded && p.Cap > 0 {
			r.kvBlocks = p.Blocks
			r.notes = append(r.notes, "KV cache: "+p.Summary())
		}
		if ke, ok := r.engine.(*rollout.KeptEngine); ok && k.Keep {
			// Sized for the plan's longest prompt, the kept sampler fits
			// every step, whose longest prompt varies.
			reserve := sampler.Config{Slots: p.Rollouts, MaxLen: p.MaxLen}
			if p.Bounded && p.Cap > 0 {
				reserve.Blocks = p.Blocks
			}
			ke.Reserve(reserve)
		}
	}
}

// trainShapes are the run's [[env]] blocks as the estimate sees them
// (estimate.TrainShapes), their prompts rendered by the model's tokenizer.
func (r *run) trainShapes() []estimate.EnvShape {
	shapes := estimate.TrainShapes(r.cfg)
	for i, te := range r.envs {
		estimate.ProbeEnv(&shapes[i], te.env, r.tok, "train", r.cfg.Sampling.EnableThinking)
	}
	return shapes
}
