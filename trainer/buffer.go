package trainer

import (
	"context"
	"fmt"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/sampler"
)

// played is one step's rollouts, in groups of rollouts_per_example, with
// each group's environment and whether it is trained on ([buffer] online
// difficulty filtering drops the groups that all failed or all
// succeeded).
type played struct {
	trajs  []rollout.Trajectory
	envOf  []int
	train  []bool
	refill int // groups played to replace dropped ones
	// metrics are the producer's off-policy figures (playAsync).
	metrics map[string]float64
}

// playStep draws and plays one step's groups: batch_size /
// rollouts_per_example examples split by the envs' weights. Under online
// difficulty filtering, the groups it drops are replaced in further
// rounds of fresh examples until the step has a full batch to train on
// or has played oversampling_factor (default 2) times the batch.
// Examples in a difficulty pool are not drawn. Without [buffer] this is
// one round, as it always was.
func (r *run) playStep(ctx context.Context, step int, timing *rollout.Timing) (*played, error) {
	if r.producer != nil {
		return r.playAsync(ctx)
	}
	R := r.cfg.RolloutsPerExample
	want := r.cfg.BatchSize / R
	limit := r.cfg.Buffer.PlayLimit(want, r.cfg.OversamplingFactor)
	var drawable func(e, i int) bool
	if r.pools != nil {
		drawable = r.pools.Drawable
	}
	p := &played{}
	kept := 0
	for round, drawn := 0, 0; kept < want && drawn < limit; round++ {
		n := min(want-kept, limit-drawn)
		counts := r.sched.Counts(step, n)
		if round > 0 {
			counts = r.sched.RefillCounts(step, round, n)
			p.refill += n
		}
		for k, te := range r.envs {
			if counts[k] == 0 {
				continue
			}
			if r.pools != nil && r.pools.DrawableCount(k) == 0 {
				return nil, errAllPooled(te.name)
			}
			idx := r.sched.Next(k, counts[k], drawable)
			exs := make([]env.Example, len(idx))
			for j, i := range idx {
				exs[j] = r.splits[k][i]
			}
			seed := sampler.DeriveSeed(r.seed, uint64(step), uint64(k))
			if round > 0 {
				seed = sampler.DeriveSeed(r.seed, uint64(step), uint64(k), uint64(round))
			}
			ts, err := r.rollouts(ctx, k, exs, R, r.samplingParams(), seed, timing)
			if err != nil {
				return nil, fmt.Errorf("rollouts of env %s: %w", te.name, err)
			}
			for g, i := range idx {
				group := ts[g*R : (g+1)*R]
				train := true
				if r.pools != nil {
					rewards := make([]float32, R)
					for j, t := range group {
						rewards[j] = float32(t.Reward)
					}
					train = r.pools.Observe(k, i, rewards)
				}
				if train {
					kept++
				}
				for _, t := range group {
					p.trajs, p.envOf, p.train = append(p.trajs, t), append(p.envOf, k), append(p.train, train)
				}
			}
		}
		drawn += n
	}
	return p, nil
}

// errAllPooled says that env's examples are all set aside, and how to
// bring some back.
func errAllPooled(env string) error {
	return fmt.Errorf("env %s: every one of its train examples is in the easy or hard pool ([buffer] easy_threshold/hard_threshold); loosen the thresholds, or resume with [buffer] easy_fraction/hard_fraction to bring some back", env)
}
