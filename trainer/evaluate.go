package trainer

import (
	"context"
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/eval"
	"github.com/grpo-dev/grpo/sampler"
)

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
		res, err := eval.Run(ctx, r.engine, te.env, te.name, eval.Options{
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
