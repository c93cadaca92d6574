package eval

import (
	"context"
	"fmt"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/env"
	_ "github.com/grpo-dev/grpo/env/builtins" // registers every environment grpo ships, so eval configs name them by id
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model/hub"
	"github.com/grpo-dev/grpo/rollout"
)

// SpecOptions configure RunSpecs.
type SpecOptions struct {
	// Batch is the rollouts per pass (0: DefaultBatch).
	Batch int
	// Download hears how model downloads advance (nil: quiet).
	Download func(hub.FileProgress)
	// OnStart is called before each evaluation with its total rollouts;
	// OnDone with the finished rollouts of the current one.
	OnStart func(spec config.EvalSpec, total int)
	OnDone  func(done int)
	// Backend runs the models instead of opening each spec's device.
	Backend kernels.Backend
	// PassThreshold is the reward at which a rollout counts as solved for
	// pass@k (0: 1, fully correct).
	PassThreshold float64
	// Endpoints, when set, is the endpoints.toml registry: a spec whose
	// model is one of its endpoint ids is evaluated on that endpoint
	// (generation through its client, the rubric here) instead of a model
	// loaded in process.
	Endpoints *endpoints.Registry
	// Rows, when set, receives every results row pass by pass (see
	// Options.Rows), so the results never sit in memory all at once;
	// the returned results then hold no trajectories. ResultsDir is the
	// directory they are written to, whose free disk space the evals are
	// checked against before they start.
	Rows       func([]Row) error
	ResultsDir string
	// Devices, when several (grpo eval --devices), are the devices a
	// model loaded here runs on: one copy of the model and one sampler on
	// each, every pass's examples split across them (rollout.Spread),
	// whole examples per device, the results in the examples' order. Each
	// spec's Device is ignored then.
	Devices []string
	// Notes hears warnings (nil: dropped): a reasoning_effort that the
	// model's chat template does not read.
	Notes func(string)
}

// RunSpecs runs the evaluations of grpo eval in order, loading each
// distinct model (and adapter) once. It checks every environment id and
// its args before it loads a model, so a typo fails at once.
func RunSpecs(ctx context.Context, specs []config.EvalSpec, o SpecOptions) ([]Result, error) {
	batch := o.Batch
	if batch <= 0 {
		batch = DefaultBatch
	}
	envs := make([]env.Environment, len(specs))
	for i, s := range specs {
		e, err := env.New(s.ID, s.Args)
		if err != nil {
			return nil, fmt.Errorf("eval %s: %w", s.Name, err)
		}
		envs[i] = e
	}
	cache := map[string]rollout.Engine{}
	defer func() {
		for _, eng := range cache {
			release(eng)
		}
	}()
	var out []Result
	for i, s := range specs {
		key := s.Model + "\x00" + s.Adapter + "\x00" + s.Device
		eng, ok := cache[key]
		if !ok {
			var err error
			if eng, err = engineFor(ctx, s, o); err != nil {
				return out, err
			}
			cache[key] = eng
		}
		exs, err := envs[i].Examples("eval")
		if err != nil {
			return out, fmt.Errorf("eval %s: %w", s.Name, err)
		}
		n := len(exs)
		if s.NumExamples >= 0 {
			n = min(n, s.NumExamples)
		}
		// Only a model loaded here holds a KV cache to fit; an endpoint's
		// results are checked by nothing but the disk they are written to.
		if le, devices := keptOf(eng); le != nil {
			// Each device holds its share of the examples.
			if err := checkFits(s, le.Model, envs[i], (n+devices-1)/devices, batch, resultsDir(o)); err != nil {
				return out, err
			}
		}
		if o.OnStart != nil {
			_, total := passShape(n, s.RolloutsPerExample, batch)
			o.OnStart(s, total)
		}
		res, err := Run(ctx, eng, envs[i], s.Name, Options{
			NumExamples: s.NumExamples, RolloutsPerExample: s.RolloutsPerExample,
			Sampling: s.Sampling, EnableThinking: s.EnableThinking, ReasoningEffort: s.ReasoningEffort, Seed: s.Seed, PassThreshold: o.PassThreshold,
			Batch: batch, OnDone: o.OnDone, Rows: o.Rows})
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

// engineFor plays a spec's episodes: on the endpoint its model names, or
// with the model (and adapter) loaded here.
func engineFor(ctx context.Context, s config.EvalSpec, o SpecOptions) (rollout.Engine, error) {
	if o.Endpoints != nil {
		if _, ok := o.Endpoints.Lookup(s.Model); ok {
			if s.Adapter != "" {
				return nil, fmt.Errorf("eval %s: --adapter applies to a model loaded here, and %s is an endpoint of %s; load the adapter on the server and name it in endpoints.toml", s.Name, s.Model, o.Endpoints.Path)
			}
			c, err := o.Endpoints.Client(s.Model, endpoints.Options{})
			if err != nil {
				return nil, err
			}
			if c.Type() != endpoints.TypeChat {
				return nil, fmt.Errorf("eval %s: endpoint %s has type %s; grpo eval plays episodes as chat, so it needs type = %q", s.Name, s.Model, c.Type(), endpoints.TypeChat)
			}
			return rollout.RemoteEngine{Gen: rollout.EndpointGenerator(c, rollout.EndpointOptions{EnableThinking: s.EnableThinking, ReasoningEffort: s.ReasoningEffort})}, nil
		}
	}
	if len(o.Devices) > 1 && o.Backend == nil {
		return spreadEngine(ctx, s, o)
	}
	m, tok, err := loadModel(ctx, s, o)
	if err != nil {
		return nil, err
	}
	if w := tok.ReasoningEffortWarning("sampling_args.reasoning_effort", s.ReasoningEffort); w != "" && o.Notes != nil {
		o.Notes(fmt.Sprintf("eval %s: %s", s.Name, w))
	}
	// Kept: the passes of every eval of this model share one sampler.
	return rollout.NewKeptEngine(m, tok), nil
}

// resultsDir is where o streams the results, "" when they are held.
func resultsDir(o SpecOptions) string {
	switch {
	case o.Rows == nil:
		return ""
	case o.ResultsDir == "":
		return "."
	}
	return o.ResultsDir
}

// OverallReward is the mean reward over every rollout of results.
func OverallReward(results []Result) float64 {
	var sum, n float64
	for _, r := range results {
		sum += r.Reward * float64(r.Rollouts)
		n += float64(r.Rollouts)
	}
	if n == 0 {
		return 0
	}
	return sum / n
}
