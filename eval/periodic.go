package eval

import (
	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/env"
)

// Target is one environment a training run's periodic evaluation plays:
// its name in eval.jsonl, the environment and its counts.
type Target struct {
	Name        string
	Env         env.Environment
	NumExamples int
	Rollouts    int
}

// Targets are [[eval.env]] when given (falling back to the training env of
// the same id) or else every training env, with [eval]'s counts. training
// are the run's training envs by name (their counts unused); an
// [[eval.env]] that is not one of them and cannot be built is left out
// with a warning through logf, so that a bad eval block does not stop the
// training run.
func Targets(ev config.Eval, training []Target, logf func(format string, args ...any)) []Target {
	if len(ev.Env) == 0 {
		var out []Target
		for _, te := range training {
			out = append(out, Target{te.Name, te.Env, ev.NumExamples, ev.RolloutsPerExample})
		}
		return out
	}
	var out []Target
	for _, ec := range ev.Env {
		e := Target{Name: ec.Name, NumExamples: ev.NumExamples, Rollouts: ev.RolloutsPerExample}
		if e.Name == "" {
			e.Name = ec.ID
		}
		if ec.NumExamples != nil {
			e.NumExamples = *ec.NumExamples
		}
		if ec.RolloutsPerExample != nil {
			e.Rollouts = *ec.RolloutsPerExample
		}
		for _, te := range training {
			// A block naming a version builds that one; without one, a
			// training env's own (versioned) instance is meant.
			if ec.Version == "" && (te.Env.ID() == ec.ID || te.Name == ec.ID) {
				e.Env = te.Env
			}
		}
		if e.Env == nil {
			if built, err := env.New(ec.Ref(), ec.Args); err == nil {
				e.Env = built
			} else {
				logf("warning: eval env %s: %v", ec.ID, err)
				continue
			}
		}
		out = append(out, e)
	}
	return out
}
