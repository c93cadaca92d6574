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
	var err error
	r.producer, err = rollout.NewProducer(srv, rollout.ProducerOptions{MaxAsync: r.cfg.AsyncLevel(), Groups: r.cfg.BatchSize / R, PerExample: R,
		InFlight: max(1, r.cfg.Inference.MaxConcurrent/R), Params: r.samplingParams(), Draw: r.drawBatch,
		Options: rollout.Options{EnableThinking: r.cfg.Sampling.EnableThinking}})
	return err
}

// drawBatch is the producer's Draw: a batch's examples, drawn as a
// synchronous step's are ([buffer], which decides them from the groups
// of the step, is refused with max_async_level). The producer calls it
// in the trainer's goroutine, during a step, so checkpoints see the
// cursors past every example handed to it.
func (r *run) drawBatch(batch int) ([]rollout.Job, error) {
	counts := r.sched.Counts(batch, r.cfg.BatchSize/r.cfg.RolloutsPerExample)
	var jobs []rollout.Job
	for k, te := range r.envs {
		for g, i := range r.sched.Next(k, counts[k], nil) {
			jobs = append(jobs, rollout.Job{Env: te.env, EnvIndex: k, Example: r.splits[k][i],
				Seed: sampler.DeriveSeed(r.seed, uint64(batch), uint64(k), uint64(g))})
		}
	}
	return jobs, nil
}

// playAsync is playStep with a producer: the groups it hands out for this
// step, each trained on, with the off-policy metrics.
func (r *run) playAsync(ctx context.Context) (*played, error) {
	b, err := r.producer.Next(ctx, r.step)
	if err != nil {
		return nil, err
	}
	p := &played{metrics: b.Metrics()}
	p.trajs, p.envOf = b.Trajectories()
	p.train = slices.Repeat([]bool{true}, len(p.trajs))
	return p, nil
}
