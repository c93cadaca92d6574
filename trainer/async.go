package trainer

import (
	"context"
	"slices"

	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/sampler"
)

// openProducer starts, with [inference] and max_async_level ≥ 1, the
// producer that plays rollouts on the server while the trainer trains
// (rollout.Producer); without, each step plays its own (playStep).
func (r *run) openProducer() error {
	srv, ok := r.engine.(*rollout.ServerEngine)
	if r.cfg.AsyncLevel() < 1 || !ok {
		return nil
	}
	R := r.cfg.RolloutsPerExample
	o := rollout.ProducerOptions{MaxAsync: r.cfg.AsyncLevel(), Groups: r.cfg.BatchSize / R, PerExample: R,
		InFlight: max(1, r.cfg.Inference.MaxConcurrent/R), Params: r.samplingParams(), Draw: r.drawBatch,
		Options: rollout.Options{EnableThinking: r.cfg.Sampling.EnableThinking, ReasoningEffort: r.cfg.Sampling.ReasoningEffort}}
	if r.pools != nil {
		// The difficulty pools judge each group as it is handed out; a
		// group they drop is replaced by the next one played, up to
		// oversampling_factor × the batch, as a synchronous step refills.
		o.Keep = r.keepGroup
		o.Examine = r.cfg.Buffer.PlayLimit(o.Groups, r.cfg.OversamplingFactor)
	}
	var err error
	r.producer, err = rollout.NewProducer(srv, o)
	return err
}

// drawBatch is the producer's Draw: a batch's examples, drawn as a
// synchronous step's first round draws them, pooled examples passed
// over. The producer calls it in the trainer's goroutine, during a step,
// so checkpoints see the cursors past every example handed to it.
func (r *run) drawBatch(batch int) ([]rollout.Job, error) {
	counts := r.sched.Counts(batch, r.cfg.BatchSize/r.cfg.RolloutsPerExample)
	var drawable func(e, i int) bool
	if r.pools != nil {
		drawable = r.pools.Drawable
	}
	var jobs []rollout.Job
	for k, te := range r.envs {
		if counts[k] > 0 && r.pools != nil && r.pools.DrawableCount(k) == 0 {
			return nil, errAllPooled(te.name)
		}
		for g, i := range r.sched.Next(k, counts[k], drawable) {
			jobs = append(jobs, rollout.Job{Env: te.env, EnvIndex: k, Example: r.splits[k][i], Index: i,
				Seed: sampler.DeriveSeed(r.seed, uint64(batch), uint64(k), uint64(g))})
		}
	}
	return jobs, nil
}

// keepGroup is the producer's Keep under [buffer]: the pools see the
// group's rewards and say whether it is trained on.
func (r *run) keepGroup(g rollout.Group) bool {
	rewards := make([]float32, len(g.Trajs))
	for j, t := range g.Trajs {
		rewards[j] = float32(t.Reward)
	}
	return r.pools.Observe(g.EnvIndex, g.Index, rewards)
}

// playAsync is playStep with a producer: the groups it hands out for this
// step, each trained on, with the off-policy metrics.
func (r *run) playAsync(ctx context.Context) (*played, error) {
	b, err := r.producer.Next(ctx, r.step)
	if err != nil {
		return nil, err
	}
	p := &played{metrics: b.Metrics(), refill: max(0, len(b.Groups)+len(b.Filtered)-r.cfg.BatchSize/r.cfg.RolloutsPerExample)}
	p.trajs, p.envOf = b.Trajectories()
	p.train = slices.Repeat([]bool{true}, len(p.trajs))
	for _, g := range b.Filtered {
		for _, t := range g.Trajs {
			p.trajs, p.envOf, p.train = append(p.trajs, t), append(p.envOf, g.EnvIndex), append(p.train, false)
		}
	}
	return p, nil
}
