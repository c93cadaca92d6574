package gepa

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/env"
	_ "github.com/grpo-dev/grpo/env/builtins" // registers every environment grpo ships, so GEPA configs name them by id
	"github.com/grpo-dev/grpo/internal/atomicfile"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/loader"
	"github.com/grpo-dev/grpo/model/hub"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/rundir"
	"github.com/grpo-dev/grpo/sampler"
)

// ConfigOptions are what RunConfig takes beside the config file.
type ConfigOptions struct {
	// ConfigPath is the GEPA file (endpoints_path is relative to it; it is
	// copied to the run directory as config.toml).
	ConfigPath string
	// Dir is the run directory: a new one, or one to resume.
	Dir string
	// Endpoints is the registry the model names resolve in when the file
	// has no endpoints_path (nil: none; every model is loaded here).
	Endpoints *endpoints.Registry
	// Backend runs the models loaded here (nil: the backend Device names).
	Backend kernels.Backend
	Device  string
	// EnableThinking is the chat templates' enable_thinking (nil: unset).
	EnableThinking *bool
	// TeacherMaxTokens caps the teacher's reply (0: 1024).
	TeacherMaxTokens int
	// MaxCalls, when above 0, replaces the file's max_calls.
	MaxCalls int
	// Download hears model downloads; Notes warnings; OnIteration and
	// Logf are Options'.
	Download    func(hub.FileProgress)
	Notes       func(string)
	OnIteration func(Progress)
	Logf        func(format string, args ...any)
}

// RunConfig runs (or resumes) the GEPA optimisation a config describes:
// the environment built from env_id and its args, the student and the
// teacher on their endpoints or loaded here, the run directory locked
// and its files written as Run writes them.
func RunConfig(ctx context.Context, g *config.GEPA, o ConfigOptions) (*Result, error) {
	args, err := envArgs(g)
	if err != nil {
		return nil, err
	}
	e, err := env.New(g.EnvID, args)
	if err != nil {
		return nil, fmt.Errorf("env_id = %q: %w", g.EnvID, err)
	}
	if spec, ok := env.Lookup(g.EnvID); ok && !spec.RawArgs && !hasArg(spec, "system_prompt") {
		note(o, fmt.Sprintf("env %s has no system_prompt argument: GEPA optimises its examples' system message all the same, but grpo train and grpo eval cannot be given the result for this environment", spec.ID))
	}
	reg := o.Endpoints
	if p := g.EndpointsFile(o.ConfigPath); p != "" {
		if reg, err = endpoints.Load(p); err != nil {
			return nil, fmt.Errorf("endpoints_path = %q: %w", g.EndpointsPath, err)
		}
	}
	engines := &engineSet{o: o, reg: reg, concurrency: g.Execution.MaxConcurrent, be: o.Backend, local: map[string]*loader.Loaded{},
		reasoningEffort: g.ReasoningEffort()}
	studentEng, err := engines.engine(ctx, "model", g.Model, g.Adapter)
	if err != nil {
		return nil, err
	}
	teacherEng, err := engines.engine(ctx, "reflection_model", g.ReflectionModel, "")
	if err != nil {
		return nil, err
	}
	s, notes, err := NewEnvStudent(studentEng, e, g.GEPA.NumTrain, g.GEPA.NumVal)
	if err != nil {
		return nil, err
	}
	for _, n := range notes {
		note(o, n)
	}
	s.Sampling, s.EnableThinking, s.MaxConcurrent, s.StateColumns = g.SamplingParams(), o.EnableThinking, g.Execution.MaxConcurrent, g.GEPA.StateColumns
	s.ReasoningEffort = g.ReasoningEffort()
	tp := sampler.DefaultParams()
	tp.MaxTokens = o.TeacherMaxTokens
	if tp.MaxTokens == 0 {
		tp.MaxTokens = 1024
	}
	t := EngineTeacher{Engine: teacherEng, Sampling: tp, EnableThinking: o.EnableThinking}

	if _, err := os.Stat(filepath.Join(o.Dir, "metrics.jsonl")); err == nil {
		return nil, fmt.Errorf("%s holds a grpo train run; give GEPA a directory of its own (--output)", o.Dir)
	}
	dir, err := rundir.Acquire(o.Dir)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	if err := copyConfig(o.ConfigPath, o.Dir); err != nil {
		return nil, err
	}
	maxCalls := g.GEPA.MaxCalls
	if o.MaxCalls > 0 {
		maxCalls = o.MaxCalls
	}
	opts := Options{SeedPrompt: s.SeedPrompt(), MaxCalls: maxCalls, MinibatchSize: g.GEPA.MinibatchSize, PerfectScore: g.GEPA.PerfectScore,
		UseMerge: g.GEPA.UseMerge, MaxMergeInvocations: g.GEPA.MaxMergeInvocations, Seed: uint64(g.Execution.Seed), Dir: o.Dir,
		Settings: settingsOf(g, args, o), OnIteration: o.OnIteration,
		Logf: func(format string, a ...any) {
			dir.Logf(format, a...)
			if o.Logf != nil {
				o.Logf(format, a...)
			}
		}}
	// The last line of log.txt is the run's status for grpo runs list.
	res, err := Run(ctx, s, t, opts)
	switch {
	case err != nil && ctx.Err() != nil:
		dir.Logf("interrupted: %v; run again to resume from the last saved iteration", context.Cause(ctx))
	case err != nil:
		dir.Logf("error: %v", err)
	default:
		dir.Logf("finished (%s): best prompt #%d, validation %.4f, after %d iterations and %d calls", res.StopReason, res.Best.ID, res.Best.Mean(), res.Iterations, res.Calls)
	}
	return res, err
}

// envArgs are env_args with extra_env_kwargs added: grpo's environments
// take every setting as an argument (verifiers sets the kwargs on the
// built environment, which comes to the same).
func envArgs(g *config.GEPA) (map[string]any, error) {
	args := map[string]any{}
	for k, v := range g.EnvArgs {
		args[k] = v
	}
	keys := make([]string, 0, len(g.ExtraEnvKwargs))
	for k := range g.ExtraEnvKwargs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, dup := args[k]; dup {
			return nil, fmt.Errorf("%s is in both env_args and extra_env_kwargs; keep one of them", k)
		}
		args[k] = g.ExtraEnvKwargs[k]
	}
	return args, nil
}

// settingsOf is what a resumed run must share with the saved one: all
// but the budget, which may grow.
func settingsOf(g *config.GEPA, args map[string]any, o ConfigOptions) map[string]any {
	thinking := "unset"
	if o.EnableThinking != nil {
		thinking = fmt.Sprint(*o.EnableThinking)
	}
	return map[string]any{
		"env_id": g.EnvID, "env_args": args, "model": g.Model, "adapter": g.Adapter, "reflection_model": g.ReflectionModel,
		"num_train": g.GEPA.NumTrain, "num_val": g.GEPA.NumVal, "minibatch_size": g.GEPA.MinibatchSize,
		"perfect_score": g.GEPA.PerfectScore, "state_columns": g.GEPA.StateColumns, "use_merge": g.GEPA.UseMerge,
		"max_merge_invocations": g.GEPA.MaxMergeInvocations, "seed": g.Execution.Seed, "sampling_args": g.Execution.SamplingArgs,
		"enable_thinking": thinking, "teacher_max_tokens": o.TeacherMaxTokens,
	}
}

// copyConfig keeps the config beside the run, as every run directory does
// (the first run's copy stays: a resumed run has checked its settings).
func copyConfig(src, dir string) error {
	dst := filepath.Join(dir, "config.toml")
	if _, err := os.Stat(dst); err == nil || src == "" {
		return nil
	}
	if err := atomicfile.CopyFile(dst, src); err != nil {
		return fmt.Errorf("run directory: %w", err)
	}
	return nil
}

func hasArg(spec env.Spec, name string) bool {
	for _, a := range spec.Args {
		if a.Name == name {
			return true
		}
	}
	return false
}

func note(o ConfigOptions, msg string) {
	if o.Notes != nil {
		o.Notes(msg)
	}
}

// engineSet makes the student's and the teacher's engines: an endpoint of
// the registry, or a model loaded here once (the teacher may share the
// student's base model).
type engineSet struct {
	o           ConfigOptions
	reg         *endpoints.Registry
	concurrency int
	be          kernels.Backend
	local       map[string]*loader.Loaded
	// reasoningEffort is the student's: sent to its endpoint, or checked
	// against its chat template (a note when that does not read it).
	reasoningEffort string
}

func (es *engineSet) engine(ctx context.Context, key, name, adapter string) (rollout.Engine, error) {
	if es.reg != nil {
		if _, ok := es.reg.Lookup(name); ok {
			if adapter != "" {
				return nil, fmt.Errorf("adapter = %q applies to a model loaded here, and %s = %q is an endpoint of %s; load the adapter on the server and name it in endpoints.toml", adapter, key, name, es.reg.Path)
			}
			c, err := es.reg.Client(name, endpoints.Options{MaxConcurrent: es.concurrency})
			if err != nil {
				return nil, err
			}
			if c.Type() != endpoints.TypeChat {
				return nil, fmt.Errorf("%s = %q: endpoint type %s; GEPA plays episodes as chat, so it needs type = %q", key, name, c.Type(), endpoints.TypeChat)
			}
			eo := rollout.EndpointOptions{EnableThinking: es.o.EnableThinking}
			if key == "model" {
				// The sampling args are the student's.
				eo.ReasoningEffort = es.reasoningEffort
			}
			return rollout.RemoteEngine{Gen: rollout.EndpointGenerator(c, eo), Concurrency: es.concurrency}, nil
		}
	}
	if l, ok := es.local[name]; ok && adapter == "" {
		return rollout.LocalEngine{Model: l.Base, Tok: l.Tokenizer}, nil
	}
	l, err := loader.Open(ctx, loader.Spec{Model: name, Backend: es.be, Device: es.o.Device, Adapter: adapter, Download: es.o.Download})
	if err != nil {
		return nil, es.openError(key, name, err)
	}
	es.be = l.Backend
	es.local[name] = l
	if w := l.Tokenizer.ReasoningEffortWarning("reasoning_effort", es.reasoningEffort); key == "model" && w != "" {
		note(es.o, w)
	}
	return rollout.LocalEngine{Model: l.Model, Tok: l.Tokenizer}, nil
}

// openError says why name, neither an endpoint nor a model, opened as
// neither; a model that was found but failed to open says so as it is.
func (es *engineSet) openError(key, name string, err error) error {
	var notFound *hub.Error
	if errors.As(err, &notFound) {
		where := "not an endpoint id (no endpoints.toml was given)"
		if es.reg != nil {
			where = "not an endpoint id of " + es.reg.Path
		}
		return fmt.Errorf("%s = %q is %s, and as a model: %w", key, name, where, notFound)
	}
	if key != "model" {
		return fmt.Errorf("%s: %w", key, err)
	}
	return err
}
