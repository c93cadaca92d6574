package config

import (
	"fmt"
	"reflect"

	"github.com/grpo-dev/grpo/sampler"
)

// Defaults of an evaluation when neither the file nor the command line sets
// them: Prime's (`prime eval run`: 5 examples, 3 rollouts each), a 512-token
// completion and the model's own distribution (temperature 1).
const (
	DefaultEvalExamples  = 5
	DefaultEvalRollouts  = 3
	DefaultEvalMaxTokens = 512
)

// EvalSpec is one resolved evaluation: an environment, the model and how to
// sample it.
type EvalSpec struct {
	Name, ID           string
	Args               map[string]any
	Model, Adapter     string
	Device             string
	NumExamples        int // -1: the whole eval split
	RolloutsPerExample int
	Sampling           sampler.Params
	EnableThinking     *bool
	// ReasoningEffort is sampling_args.reasoning_effort, the block's over
	// the top level's ("": unset).
	ReasoningEffort string
	Seed            uint64
}

// EvalOverrides are command-line settings; set fields win over the file's
// top-level defaults but not over a block's own keys (Prime's order:
// per-eval TOML, then CLI, then defaults). Model applies where the file
// names none.
type EvalOverrides struct {
	Model, Adapter, Device string
	NumExamples            *int
	RolloutsPerExample     *int
	// Sampling are grpo eval's --max-tokens and --temperature.
	Sampling sampler.Overrides
	Seed     *int64
	// NoThinking is grpo eval's --no-thinking: enable_thinking = false
	// for every evaluation, whatever the file says.
	NoThinking bool
}

// Specs resolves the blocks into evaluations: block keys, then overrides,
// then top-level keys, then the defaults. It fails when an evaluation has
// no model.
func (f *EvalFile) Specs(o EvalOverrides) ([]EvalSpec, error) {
	var out []EvalSpec
	for i, b := range f.Eval {
		pick := func(block, top string, cli string) string {
			switch {
			case block != "":
				return block
			case cli != "":
				return cli
			}
			return top
		}
		s := EvalSpec{Name: b.Name, ID: b.ID, Args: map[string]any{},
			Model:   pick(b.Model, f.Model, o.Model),
			Adapter: pick(b.Adapter, f.Adapter, o.Adapter),
			Device:  pick(b.Device, f.Device, o.Device),
		}
		if s.Model == "" {
			return nil, fmt.Errorf(`[[eval]] %d (id = %q) has no model: set model = "Qwen/Qwen3-0.6B" at the top of the file or pass -m`, i+1, b.ID)
		}
		if s.Device == "" {
			s.Device = "cpu"
		}
		for k, v := range b.Args {
			s.Args[k] = v
		}
		for _, kw := range []map[string]any{f.ExtraEnvKwargs, b.ExtraEnvKwargs} {
			for k, v := range kw {
				if old, dup := s.Args[k]; dup && !reflect.DeepEqual(old, v) {
					return nil, fmt.Errorf("[[eval]] %d (id = %q): extra_env_kwargs.%s = %v conflicts with args.%s = %v; keep one of them", i+1, b.ID, k, v, k, old)
				}
				s.Args[k] = v
			}
		}
		s.NumExamples = pickInt(b.NumExamples, o.NumExamples, f.NumExamples, DefaultEvalExamples)
		s.RolloutsPerExample = pickInt(b.RolloutsPerExample, o.RolloutsPerExample, f.RolloutsPerExample, DefaultEvalRollouts)
		// Sampling keys are laid over the defaults from the weakest to the
		// strongest: the top level's, the command line's, the block's.
		p := sampler.DefaultParams()
		p.MaxTokens = DefaultEvalMaxTokens
		b.sampling().Over(o.Sampling.Over(f.sampling())).Apply(&p)
		for _, sa := range []*EvalSamplingArgs{f.SamplingArgs, b.SamplingArgs} {
			if sa != nil && sa.Seed != nil {
				s.Seed = uint64(*sa.Seed)
			}
			if sa != nil && sa.ReasoningEffort != "" {
				s.ReasoningEffort = sa.ReasoningEffort
			}
		}
		if v := firstInt64(b.Seed, o.Seed, f.Seed); v != nil {
			s.Seed = uint64(*v)
		}
		s.EnableThinking = f.EnableThinking
		if b.EnableThinking != nil {
			s.EnableThinking = b.EnableThinking
		}
		if o.NoThinking {
			off := false
			s.EnableThinking = &off
		}
		s.Sampling = p
		out = append(out, s)
	}
	return out, nil
}

func pickInt(block, cli, top *int, def int) int {
	if v := firstInt(block, cli, top); v != nil {
		return *v
	}
	return def
}

func firstInt(xs ...*int) *int {
	for _, x := range xs {
		if x != nil {
			return x
		}
	}
	return nil
}

func firstInt64(xs ...*int64) *int64 {
	for _, x := range xs {
		if x != nil {
			return x
		}
	}
	return nil
}
