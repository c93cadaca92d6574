package trainer

import (
	"cmp"
	"context"
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/eval"
	"github.com/grpo-dev/grpo/sampler"
)

// evaluate runs the periodic evaluation of a training run and appends it
// to eval.jsonl.
func (r *run) evaluate(ctx context.Context) error {
	cfg := r.cfg
	p := r.samplingParams()
	cfg.Eval.Sampling.Overrides().Apply(&p)
	effort := cmp.Or(cfg.Eval.Sampling.ReasoningEffort, cfg.Sampling.ReasoningEffort)
	row := map[string]any{"step": r.step}
	var sum, n float64
	if err := r.usePolicy(ctx); err != nil {
		return fmt.Errorf("eval at step %d: %w", r.step, err)
	}
	for k, te := range r.evalEnvs() {
		res, err := eval.Run(ctx, r.engine, te.Env, te.Name, eval.Options{
			NumExamples: te.NumExamples, RolloutsPerExample: te.Rollouts, Sampling: p,
			EnableThinking: cfg.Sampling.EnableThinking, ReasoningEffort: effort, Seed: sampler.DeriveSeed(r.seed, 0xe7a1, uint64(k))})
		if err != nil {
			return fmt.Errorf("eval at step %d: %w", r.step, err)
		}
		row["env/"+te.Name+"/reward"] = res.Reward
		row["env/"+te.Name+"/pass@1"] = res.PassAt1
		sum += res.Reward * float64(res.Rollouts)
		n += float64(res.Rollouts)
	}
	reward := sum / math.Max(n, 1)
	row["reward"] = reward
	r.bar.note("eval step %d: reward %.3f", r.step, reward)
	r.dir.Logf("eval step %d reward %.4f", r.step, reward)
	return r.sinks.Eval(row)
}

// evalEnvs are the run's periodic evaluation targets (eval.Targets) over
// its training envs.
func (r *run) evalEnvs() []eval.Target {
	training := make([]eval.Target, len(r.envs))
	for i, te := range r.envs {
		training[i] = eval.Target{Name: te.name, Env: te.env}
	}
	return eval.Targets(r.cfg.Eval, training, r.dir.Logf)
}
