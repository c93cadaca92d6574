package replicas

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/sampler"
)

// The set is the run's rollout engine (rollout.PolicyEngine): a call's
// examples are cut into one run per device, each device plays its run on
// its own replica, and the trajectories come back in the call's order.
var _ rollout.PolicyEngine = (*Set)(nil)

// Play plays exs across the devices. The runs are balanced by prompt
// tokens × perExample — what a device's share costs to prefill and, as
// far as is known before sampling, to train; the completions' lengths
// are not known yet. Every rollout draws the seed it would in one call
// (rollout.Options.FirstExample), so the tokens do not depend on the
// device count. Expert-parallel ranks all play, those with no examples
// too: each one's sampler takes part in the others' forwards
// (rollout/lockstep.go), and one that fails aborts their collective.
func (s *Set) Play(ctx context.Context, e env.Environment, exs []env.Example, perExample int, p sampler.Params, seed uint64, opts rollout.Options) ([]rollout.Trajectory, error) {
	if len(s.reps) == 1 && s.world == nil {
		return s.reps[0].Engine.Play(ctx, e, exs, perExample, p, seed, opts)
	}
	costs := make([]int, len(exs))
	for i, ex := range exs {
		costs[i] = perExample // a prompt that does not render fails at once
		if ids, err := rollout.RenderEnvPrompt(s.tok, e, ex.Prompt, s.enableThinking); err == nil {
			costs[i] = max(1, len(ids)) * perExample
		}
	}
	first, parts := s.world.first(len(s.reps))
	bounds := splitRuns(costs, parts)
	if s.ep {
		for d := range s.reps { // every rank's sampler as large (rollout.Options.Slots)
			opts.Slots = max(opts.Slots, (bounds[d+1]-bounds[d])*perExample)
		}
	}
	trajs := make([]rollout.Trajectory, len(exs)*perExample)
	timings := make([]rollout.Timing, len(s.reps))
	errs := make([]error, len(s.reps))
	var wg sync.WaitGroup
	for d, rep := range s.reps {
		lo, hi := bounds[first+d], bounds[first+d+1]
		if lo == hi && s.world == nil && !s.ep {
			continue
		}
		o := opts
		o.FirstExample += lo
		o.Timing = &timings[d]
		wg.Go(func() {
			errs[d] = recovered(func() error {
				var ts []rollout.Trajectory
				var err error
				if lo < hi || s.ep { // an EP rank plays its part in the others' forwards
					ts, err = rep.Engine.Play(ctx, e, exs[lo:hi], perExample, p, seed, o)
				}
				if s.world == nil || err != nil {
					copy(trajs[lo*perExample:hi*perExample], ts)
					return err
				}
				// Across processes every device's run comes to every
				// rank, so all hold the whole call's trajectories.
				runs, err := gatherTrajectories(rep.coll, rep.Backend, ts)
				if err == nil && d == 0 {
					err = placeRuns(trajs, runs, bounds, exs, perExample)
				}
				return err
			})
			if errs[d] != nil && (s.world != nil || s.ep) {
				rep.abort(errs[d]) // the other ranks' calls end instead of waiting
			}
		})
	}
	wg.Wait()
	if opts.Timing != nil {
		// The devices play at once: the call takes as long as the slowest.
		var t rollout.Timing
		for _, d := range timings {
			t.Play, t.Score, t.Generate, t.Respond = max(t.Play, d.Play), max(t.Score, d.Score), max(t.Generate, d.Generate), max(t.Respond, d.Respond)
		}
		opts.Timing.Add(t)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return trajs, nil
}

// SetPolicy is every replica engine's: in-process engines sample from
// their replica's adapter, which the step keeps equal to replica 0's.
func (s *Set) SetPolicy(ctx context.Context, step int, a *lora.Adapter) error {
	for i, rep := range s.reps {
		pe, ok := rep.Engine.(rollout.PolicyEngine)
		if !ok {
			continue
		}
		ad := rep.Policy.Adapter
		if i == 0 {
			ad = a
		}
		if err := pe.SetPolicy(ctx, step, ad); err != nil {
			return err
		}
	}
	return nil
}

// Release frees the samplers the replicas' engines keep between plays
// (rollout.KeptEngine), as the trainer does before an update that does
// not leave room for them.
func (s *Set) Release() {
	for _, rep := range s.reps {
		if r, ok := rep.Engine.(interface{ Release() }); ok {
			r.Release()
		}
	}
}

// placeRuns lays every device's run of trajectories into trajs, in the
// call's order, each with its example (which the gather leaves behind).
func placeRuns(trajs []rollout.Trajectory, runs [][]rollout.Trajectory, bounds []int, exs []env.Example, perExample int) error {
	for g, run := range runs {
		lo, hi := bounds[g], bounds[g+1]
		if len(run) != (hi-lo)*perExample {
			return fmt.Errorf("replicas: device %d of the job played %d trajectories for %d examples × %d", g, len(run), hi-lo, perExample)
		}
		for i, t := range run {
			t.Example = exs[lo+i/perExample]
			trajs[lo*perExample+i] = t
		}
	}
	return nil
}
