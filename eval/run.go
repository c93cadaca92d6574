package eval

import (
	"context"
	"fmt"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/sampler"
)

// Options configure Run.
type Options struct {
	// NumExamples is how many examples of the eval split to use, from its
	// start; -1 means all.
	NumExamples int
	// RolloutsPerExample is k of pass@k and avg@k.
	RolloutsPerExample int
	Sampling           sampler.Params
	EnableThinking     *bool
	// ReasoningEffort is gpt-oss's reasoning_effort ("": unset).
	ReasoningEffort string
	Seed            uint64
	// PassThreshold is the reward at which a rollout counts as solved for
	// pass@k; default 1 (fully correct).
	PassThreshold float64
	// Batch is the most rollouts played at once (whole examples while an
	// example's rollouts fit in one pass; else each example's rollouts
	// split into passes of Batch), which bounds the KV cache. 0 plays the
	// whole evaluation in one pass.
	Batch int
	// Examples, when set, are played instead of the environment's eval
	// split (NumExamples still takes their start): GEPA's candidates are
	// the split's examples under another system prompt.
	Examples []env.Example
	// OnDone, if set, is called (from any goroutine, one call at a time)
	// with the number of finished rollouts so far; in one pass (Batch 0)
	// only once, at its end.
	OnDone func(done int)
	// Rows, when set, receives each pass's results rows as soon as the pass
	// ends, and the result then keeps no trajectories: memory holds one
	// pass, however many rollouts the eval has.
	Rows func([]Row) error
}

// Result is one environment's evaluation.
type Result struct {
	Env      string
	Examples int
	Rollouts int
	// Reward is the mean reward over all rollouts (avg@k).
	Reward float64
	// PassAt1 is the unbiased pass@1 estimate (mean over examples of the
	// fraction of solved rollouts); PassAtK is the fraction of examples
	// with at least one solved rollout among k.
	PassAt1, PassAtK float64
	Errors           int
	Trajectories     []rollout.Trajectory
}

// Run plays the eval split of e on eng (rollout.LocalEngine or KeptEngine
// for a model loaded here, with its adapter attached by
// model.WithAdapter; rollout.RemoteEngine for an inference server) and
// scores it. With o.Batch set the first pass uses o.Seed, so a split that
// fits one pass gives exactly the one-pass result; the pass starting at
// example s uses sampler.DeriveSeed(o.Seed, s).
func Run(ctx context.Context, eng rollout.Engine, e env.Environment, name string, o Options) (Result, error) {
	if o.Batch > 0 {
		return inPasses(ctx, eng, e, name, o)
	}
	res, err := onePass(ctx, eng, e, name, o)
	if err != nil {
		return res, err
	}
	if o.OnDone != nil {
		o.OnDone(res.Rollouts)
	}
	if o.Rows != nil {
		rows := res.Rows()
		res.Trajectories = nil
		return res, o.Rows(rows)
	}
	return res, nil
}

// examples are the examples o plays: o.Examples or e's eval split, cut to
// o.NumExamples.
func examples(e env.Environment, name string, o Options) ([]env.Example, error) {
	exs := o.Examples
	if exs == nil {
		var err error
		if exs, err = e.Examples("eval"); err != nil {
			return nil, fmt.Errorf("env %s: %w", name, err)
		}
	}
	if o.NumExamples >= 0 && o.NumExamples < len(exs) {
		exs = exs[:o.NumExamples]
	}
	if len(exs) == 0 {
		return nil, fmt.Errorf("env %s: the eval split is empty", name)
	}
	return exs, nil
}

// onePass plays every rollout of the evaluation at once and scores them.
func onePass(ctx context.Context, eng rollout.Engine, e env.Environment, name string, o Options) (Result, error) {
	res := Result{Env: name}
	if o.RolloutsPerExample < 1 {
		o.RolloutsPerExample = 1
	}
	if o.PassThreshold == 0 {
		o.PassThreshold = 1
	}
	exs, err := examples(e, name, o)
	if err != nil {
		return res, err
	}
	k := o.RolloutsPerExample
	trajs, err := eng.Play(ctx, e, exs, k, o.Sampling, o.Seed, rollout.Options{EnableThinking: o.EnableThinking, ReasoningEffort: o.ReasoningEffort})
	if err != nil {
		return res, fmt.Errorf("env %s: %w", name, err)
	}
	res.Examples, res.Rollouts, res.Trajectories = len(exs), len(trajs), trajs
	if err := allFailed(trajs); err != nil {
		return res, fmt.Errorf("env %s: %w", name, err)
	}
	var sum, pass1, passK float64
	for i := range exs {
		solved := 0
		for j := range k {
			t := trajs[i*k+j]
			sum += t.Reward
			res.Errors += len(t.Errors)
			if t.Reward >= o.PassThreshold-1e-9 {
				solved++
			}
		}
		pass1 += float64(solved) / float64(k)
		if solved > 0 {
			passK++
		}
	}
	res.Reward = sum / float64(len(trajs))
	res.PassAt1 = pass1 / float64(len(exs))
	res.PassAtK = passK / float64(len(exs))
	return res, nil
}

// allFailed is an error when every rollout failed before the model
// answered once — an endpoint that cannot be reached, a key it refuses, a
// model that cannot load: that is no score of the model, and a reward of
// 0 would pass for one. It names the first rollout's error. Episodes
// that failed after the model answered are scored 0 and counted, as the
// environment's own failures.
func allFailed(trajs []rollout.Trajectory) error {
	if len(trajs) == 0 {
		return nil
	}
	for _, t := range trajs {
		if t.Turns > 0 || len(t.Errors) == 0 {
			return nil
		}
	}
	return fmt.Errorf("every one of the %d rollouts failed before the model answered; the first: %s", len(trajs), trajs[0].Errors[0])
}
