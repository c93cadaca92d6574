package trainer

import (
	"context"
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
)

// EvalOptions configure Evaluate.
type EvalOptions struct {
	// NumExamples is how many examples of the eval split to use, from its
	// start; -1 means all.
	NumExamples int
	// RolloutsPerExample is k of pass@k and avg@k.
	RolloutsPerExample int
	Sampling           sampler.Params
	EnableThinking     *bool
	Seed               uint64
	// PassThreshold is the reward at which a rollout counts as solved for
	// pass@k; default 1 (fully correct).
	PassThreshold float64
	// Rows, when set, receives each pass's results rows as soon as
	// EvaluateInBatches finishes the pass, and the result then keeps no
	// trajectories: memory holds one pass, however many rollouts the eval
	// has. Evaluate itself ignores it.
	Rows func([]EvalRow) error
}

// EvalResult is one environment's evaluation.
type EvalResult struct {
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

// Evaluate plays the eval split of e with m (attach an adapter with
// model.WithAdapter) and scores it.
func Evaluate(ctx context.Context, m *model.Model, tok *tokenizer.Tokenizer, e env.Environment, name string, o EvalOptions) (EvalResult, error) {
	return EvaluateWith(ctx, rollout.LocalEngine{Model: m, Tok: tok}, e, name, o)
}

// EvaluateWith is Evaluate with the episodes played by eng: in process, or
// on an inference server (rollout.RemoteEngine).
func EvaluateWith(ctx context.Context, eng rollout.Engine, e env.Environment, name string, o EvalOptions) (EvalResult, error) {
	res := EvalResult{Env: name}
	if o.RolloutsPerExample < 1 {
		o.RolloutsPerExample = 1
	}
	if o.PassThreshold == 0 {
		o.PassThreshold = 1
	}
	exs, err := e.Examples("eval")
	if err != nil {
		return res, fmt.Errorf("env %s: %w", name, err)
	}
	if o.NumExamples >= 0 && o.NumExamples < len(exs) {
		exs = exs[:o.NumExamples]
	}
	if len(exs) == 0 {
		return res, fmt.Errorf("env %s: the eval split is empty", name)
	}
	k := o.RolloutsPerExample
	trajs, err := eng.Play(ctx, e, exs, k, o.Sampling, o.Seed, rollout.Options{EnableThinking: o.EnableThinking})
	if err != nil {
		return res, fmt.Errorf("env %s: %w", name, err)
	}
	res.Examples, res.Rollouts, res.Trajectories = len(exs), len(trajs), trajs
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

// evaluate runs the periodic evaluation of a training run and appends it
// to eval.jsonl.
func (r *run) evaluate(ctx context.Context) error {
	cfg := r.cfg
	p := r.samplingParams()
	cfg.Eval.Sampling.Overrides().Apply(&p)
	row := map[string]any{"step": r.step}
	var sum, n float64
	if err := r.usePolicy(ctx); err != nil {
		return fmt.Errorf("eval at step %d: %w", r.step, err)
	}
	for k, te := range r.evalEnvs() {
		res, err := EvaluateWith(ctx, r.engine, te.env, te.name, EvalOptions{
			NumExamples: te.numExamples, RolloutsPerExample: te.rollouts, Sampling: p,
			EnableThinking: cfg.Sampling.EnableThinking, Seed: sampler.DeriveSeed(r.seed, 0xe7a1, uint64(k))})
		if err != nil {
			return fmt.Errorf("eval at step %d: %w", r.step, err)
		}
		row["env/"+te.name+"/reward"] = res.Reward
		row["env/"+te.name+"/pass@1"] = res.PassAt1
		sum += res.Reward * float64(res.Rollouts)
		n += float64(res.Rollouts)
	}
	reward := sum / math.Max(n, 1)
	row["reward"] = reward
	r.bar.note("eval step %d: reward %.3f", r.step, reward)
	r.dir.Logf("eval step %d reward %.4f", r.step, reward)
	return r.sinks.Eval(row)
}

type evalEnv struct {
	name        string
	env         env.Environment
	numExamples int
	rollouts    int
}

// evalEnvs are [[eval.env]] when given (falling back to the training env of
// the same id) or else every training env, with [eval]'s counts.
func (r *run) evalEnvs() []evalEnv {
	ev := r.cfg.Eval
	if len(ev.Env) == 0 {
		var out []evalEnv
		for _, te := range r.envs {
			out = append(out, evalEnv{te.name, te.env, ev.NumExamples, ev.RolloutsPerExample})
		}
		return out
	}
	var out []evalEnv
	for _, ec := range ev.Env {
		e := evalEnv{name: ec.Name, numExamples: ev.NumExamples, rollouts: ev.RolloutsPerExample}
		if e.name == "" {
			e.name = ec.ID
		}
		if ec.NumExamples != nil {
			e.numExamples = *ec.NumExamples
		}
		if ec.RolloutsPerExample != nil {
			e.rollouts = *ec.RolloutsPerExample
		}
		for _, te := range r.envs {
			if te.env.ID() == ec.ID || te.name == ec.ID {
				e.env = te.env
			}
		}
		if e.env == nil {
			if built, err := env.New(ec.ID, ec.Args); err == nil {
				e.env = built
			} else {
				r.dir.Logf("warning: eval env %s: %v", ec.ID, err)
				continue
			}
		}
		out = append(out, e)
	}
	return out
}
