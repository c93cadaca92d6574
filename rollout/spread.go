package rollout

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/sampler"
)

// Spread plays a call's examples across engines, one per device (grpo
// eval --devices): the examples are cut into one consecutive run per
// engine, as even in count as they divide (an example's rollouts stay on
// one device, sharing its prompt's KV blocks); the engines play at once
// and the trajectories come back in the call's order. Every rollout
// draws the seed it would in one call (Options.FirstExample), so the
// results do not depend on the engine count.
type Spread []Engine

// Play is the engines' runs, gathered in order.
func (s Spread) Play(ctx context.Context, e env.Environment, exs []env.Example, perExample int, p sampler.Params, seed uint64, opts Options) ([]Trajectory, error) {
	if len(s) == 1 {
		return s[0].Play(ctx, e, exs, perExample, p, seed, opts)
	}
	trajs := make([]Trajectory, len(exs)*perExample)
	timings := make([]Timing, len(s))
	errs := make([]error, len(s))
	var wg sync.WaitGroup
	for d, eng := range s {
		lo, hi := len(exs)*d/len(s), len(exs)*(d+1)/len(s)
		if lo == hi {
			continue
		}
		o := opts
		o.FirstExample += lo
		o.Timing = &timings[d]
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					errs[d] = fmt.Errorf("device %d: panic: %v", d, r)
				}
			}()
			ts, err := eng.Play(ctx, e, exs[lo:hi], perExample, p, seed, o)
			copy(trajs[lo*perExample:hi*perExample], ts)
			if err != nil {
				errs[d] = fmt.Errorf("device %d: %w", d, err)
			}
		})
	}
	wg.Wait()
	if opts.Timing != nil {
		// The devices play at once: the call takes as long as the slowest.
		var t Timing
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
