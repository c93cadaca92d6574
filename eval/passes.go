package eval

import (
	"context"
	"math"
	"sync"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/sampler"
)

// DefaultBatch is how many rollouts grpo eval plays at once when not told:
// a sampler's KV cache holds one slot per rollout, so a 1000 example eval
// in one pass would need a thousand slots.
const DefaultBatch = 64

// inPasses is Run over the examples in passes of at most o.Batch rollouts.
func inPasses(ctx context.Context, eng rollout.Engine, e env.Environment, name string, o Options) (Result, error) {
	res := Result{Env: name}
	k := max(1, o.RolloutsPerExample)
	batch := o.Batch
	exs, err := examples(e, name, o)
	if err != nil {
		return res, err
	}
	per := max(1, batch/k)
	var mu sync.Mutex
	done := 0
	tick := func(n int, absolute bool) {
		mu.Lock()
		defer mu.Unlock()
		if absolute {
			done = n
		} else {
			done += n
		}
		if o.OnDone != nil {
			o.OnDone(done)
		}
	}
	var rewardSum, pass1Sum, passKSum float64
	add := func(r Result) {
		res.Examples += r.Examples
		res.Rollouts += r.Rollouts
		res.Errors += r.Errors
		res.Trajectories = append(res.Trajectories, r.Trajectories...)
		rewardSum += r.Reward * float64(r.Rollouts)
		pass1Sum += r.PassAt1 * float64(r.Examples)
		passKSum += r.PassAtK * float64(r.Examples)
	}
	// keep hands a pass's trajectories on as rows when o.Rows streams them
	// (its first example is example exOff, its first rollout roOff),
	// else leaves them in r for add.
	keep := func(r *Result, exOff, roOff int) error {
		if o.Rows == nil {
			return nil
		}
		rows := r.rowsFrom(exOff, roOff)
		r.Trajectories = nil
		return o.Rows(rows)
	}
	if k > batch {
		// One example's rollouts alone exceed a pass: split them too.
		for i := range exs {
			r, err := splitExample(ctx, eng, e, name, o, exs, i, k, batch, func() { tick(1, false) }, keep)
			if err != nil {
				return res, err
			}
			tick((i+1)*k, true)
			add(r)
		}
	}
	for start := 0; start < len(exs) && k <= batch; start += per {
		end := min(start+per, len(exs))
		po := o
		po.NumExamples, po.RolloutsPerExample, po.Examples = -1, k, exs[start:end]
		if start > 0 {
			po.Seed = sampler.DeriveSeed(o.Seed, uint64(start))
		}
		w := &countingEnv{Environment: e, done: func() { tick(1, false) }}
		r, err := onePass(ctx, eng, w, name, po)
		if err != nil {
			return res, err
		}
		tick(end*k, true) // episodes cut off by a length limit never said done
		if err := keep(&r, start, 0); err != nil {
			return res, err
		}
		add(r)
	}
	res.Reward = rewardSum / float64(res.Rollouts)
	res.PassAt1 = pass1Sum / float64(res.Examples)
	res.PassAtK = passKSum / float64(res.Examples)
	return res, nil
}

// splitExample evaluates example i's k rollouts in passes of at most batch
// (the pass at rollout c seeded by DeriveSeed(seed, i, c)), so the KV cache
// and the episodes in flight stay at batch whatever k is, and combines them
// into one example's result: pass@1 and pass@k over all k.
func splitExample(ctx context.Context, eng rollout.Engine, e env.Environment, name string, o Options, exs []env.Example, i, k, batch int, done func(), keep func(r *Result, exOff, roOff int) error) (Result, error) {
	res := Result{Env: name, Examples: 1}
	threshold := o.PassThreshold
	if threshold == 0 {
		threshold = 1
	}
	var sum float64
	solved := 0
	for c := 0; c < k; c += batch {
		po := o
		po.NumExamples, po.RolloutsPerExample, po.Examples = -1, min(batch, k-c), exs[i:i+1]
		po.Seed = sampler.DeriveSeed(o.Seed, uint64(i), uint64(c))
		w := &countingEnv{Environment: e, done: done}
		r, err := onePass(ctx, eng, w, name, po)
		if err != nil {
			return res, err
		}
		for _, t := range r.Trajectories {
			sum += t.Reward
			if t.Reward >= threshold-1e-9 {
				solved++
			}
		}
		res.Rollouts += r.Rollouts
		res.Errors += r.Errors
		if err := keep(&r, i, c); err != nil {
			return res, err
		}
		res.Trajectories = append(res.Trajectories, r.Trajectories...)
	}
	res.Reward = sum / float64(res.Rollouts)
	res.PassAt1 = float64(solved) / float64(k)
	if solved > 0 {
		res.PassAtK = 1
	}
	return res, nil
}

// passShape is the shape Run plays n examples of k rollouts in with
// passes of batch: the rollouts of its largest pass, and in all
// (saturating, so an absurd -r cannot wrap around into a small number).
func passShape(n, k, batch int) (slots, total int) {
	k = max(1, k)
	if batch <= 0 {
		batch = DefaultBatch
	}
	if k > batch {
		slots = batch
	} else {
		slots = min(n, max(1, batch/k)) * k
	}
	if n > 0 && k > math.MaxInt/n {
		return slots, math.MaxInt
	}
	return slots, n * k
}
