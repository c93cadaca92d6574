package estimate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/env"
	_ "github.com/grpo-dev/grpo/env/builtins" // registers every environment grpo ships, so configs name them by id
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/model/hub"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/tokenizer"
)

// RunOptions configure Run.
type RunOptions struct {
	// Shape names an entry of model.Shapes to estimate for instead of
	// cfg.Model: nothing is read or downloaded for the model.
	Shape string
	// Device overrides cfg.Device.
	Device string
	// Measure runs the timed warm-up (seconds for small models; on a CPU a
	// model of hundreds of millions of parameters takes minutes).
	Measure bool
	// Log receives one line per thing Run is about to do that may
	// take a while (a download, the warm-up); nil is silent.
	Log io.Writer
	// Hub configures model resolution (cache, endpoint, offline).
	Hub hub.Options
	// ExpertParallel prices one device of an expert-parallel group of
	// that many devices (Options.ExpertParallel); 0 or 1: the whole model.
	ExpertParallel int
}

// promptSample bounds how many examples per environment are rendered to
// find the longest prompt.
const promptSample = 512

// Run estimates a run of cfg as it would start now: the model's
// shape comes from its local directory or hub cache, or else from its
// config.json alone (downloaded; no weights); prompt lengths from rendering
// the environments' examples with the model's tokenizer when it is at hand;
// the free memory from the device; and, with Measure, the step time from a
// warm-up on the real weights (random weights of the same shape when they
// are not local).
func Run(ctx context.Context, cfg *config.Config, o RunOptions) (*Estimate, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	device := o.Device
	if device == "" {
		device = cfg.Device
	}
	mc, dir, notes, err := estimateModel(ctx, cfg.Model, o)
	if err != nil {
		return nil, err
	}
	var tok *tokenizer.Tokenizer
	if dir != "" {
		if tok, err = tokenizer.Load(dir); err != nil {
			notes = append(notes, fmt.Sprintf("tokenizer unreadable (%v)", err))
			tok = nil
		}
	}
	train, eval, envNotes := probeEnvs(cfg, tok)
	if eval == nil {
		eval = []EnvShape{} // probed: none to count (nil would derive it from the config)
	}
	av, err := AvailableMemory(device)
	if err != nil {
		return nil, err
	}
	e, err := Memory(cfg, mc, Options{Device: device, Train: train, Eval: eval,
		Assumptions: append(notes, envNotes...), Available: &av, ExpertParallel: o.ExpertParallel})
	if err != nil {
		return nil, err
	}
	if o.Shape != "" {
		e.Model = o.Shape
	}
	e.Available = &av
	if !o.Measure {
		return e, nil
	}
	be, err := kernels.Open(device)
	if err != nil {
		return nil, fmt.Errorf("device = %q: %w", device, err)
	}
	var m *model.Model
	if dir != "" && hasWeights(dir) {
		logf(o.Log, "loading %s for the warm-up", cfg.Model)
		if m, err = model.Load(dir, be); err != nil {
			return nil, err
		}
	} else {
		logf(o.Log, "weights not local: the warm-up runs random weights of the same shape")
		m = model.NewRandom(mc, be, uint64(cfg.Seed))
	}
	defer m.Free()
	// The warm-up trains under the chosen policy, so its time includes
	// what the backward recomputes.
	m.Recompute, m.CheckpointLayers = e.Recompute, e.CheckpointLayers
	if device == "cpu" && mc.ParamCount() > 200e6 {
		logf(o.Log, "measuring a %s-parameter model on the CPU takes minutes; --no-measure skips it", count(mc.ParamCount()))
	} else {
		logf(o.Log, "measuring a warm-up step on %s", device)
	}
	for i := range train {
		for _, p := range e.KV {
			if p.Phase == PhaseSampling && p.Env == train[i].Name && p.Bounded {
				train[i].Concurrent = p.Cap
			}
		}
	}
	if e.Time, err = MeasureStepTime(ctx, m, cfg, train); err != nil {
		return nil, err
	}
	if c, ok := e.chosenRecompute(); ok && c.ExtraFLOPs > 0 {
		e.Time.Assumptions = append(e.Time.Assumptions, fmt.Sprintf("training measured under recompute = %s, which adds %.3g%% to a micro-batch's FLOPs; other settings' train time scaled by their FLOPs",
			c.Setting, 100*c.ExtraFLOPs/e.TrainFLOPs))
	}
	return e, nil
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

// estimateModel finds the model's config: a named shape, a local or cached
// model directory (dir is then set, for the tokenizer and weights), or
// config.json fetched alone.
func estimateModel(ctx context.Context, id string, o RunOptions) (mc *model.Config, dir string, notes []string, err error) {
	if o.Shape != "" {
		mc, ok := model.Shape(o.Shape)
		if !ok {
			return nil, "", nil, fmt.Errorf("shape %q is unknown; known shapes: %v", o.Shape, model.ShapeNames())
		}
		return mc, "", []string{fmt.Sprintf("model shape %s from model.Shapes (the config's model %q is not read)", o.Shape, id)}, nil
	}
	offline := o.Hub
	offline.Offline = true
	dir, err = hub.Resolve(ctx, id, offline)
	if err == nil {
		mc, err := model.LoadConfig(dir)
		return mc, dir, nil, err
	}
	if !errors.Is(err, hub.ErrNotCached) || o.Hub.Offline {
		return nil, "", nil, fmt.Errorf("model = %q: %w", id, err)
	}
	logf(o.Log, "%s is not downloaded; fetching its config.json only", id)
	path, err := hub.DownloadFile(ctx, id, "config.json", o.Hub)
	if err != nil {
		return nil, "", nil, fmt.Errorf("model = %q: %w", id, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", nil, err
	}
	if mc, err = model.ParseConfig(data); err != nil {
		return nil, "", nil, fmt.Errorf("%s config.json: %w", id, err)
	}
	return mc, "", []string{id + " is not downloaded: its shape is from config.json alone"}, nil
}

func hasWeights(dir string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	return len(m) > 0
}

// probeEnvs builds each environment to measure its longest prompt (with
// tok; unknown without), its turn limit and its eval split's size.
func probeEnvs(cfg *config.Config, tok *tokenizer.Tokenizer) (train, eval []EnvShape, notes []string) {
	built := map[string]env.Environment{}
	build := func(id string, args map[string]any) env.Environment {
		if e, ok := built[id]; ok {
			return e
		}
		e, err := env.New(id, args)
		if err != nil {
			notes = append(notes, fmt.Sprintf("env %s cannot be built (%v): its prompt length is assumed", id, err))
			return nil
		}
		built[id] = e
		return e
	}
	measure := func(s *EnvShape, e env.Environment, split string) {
		notes = append(notes, ProbeEnv(s, e, tok, split, cfg.Sampling.EnableThinking)...)
	}
	train = TrainShapes(cfg)
	for i, ec := range cfg.Env {
		if e := build(ec.Ref(), ec.Args); e != nil {
			measure(&train[i], e, "train")
		}
	}
	if cfg.Eval.Interval == 0 {
		return train, nil, notes
	}
	maxTokens := cfg.Sampling.MaxTokens
	if m := cfg.Eval.Sampling.MaxTokens; m > 0 {
		maxTokens = m
	}
	add := func(name, id string, args map[string]any, n, k int) {
		s := EnvShape{Name: name, Examples: n, Rollouts: k, MaxTurns: 1, MaxTokens: maxTokens}
		if e := build(id, args); e != nil {
			measure(&s, e, "eval")
		}
		if s.Examples > 0 {
			eval = append(eval, s)
		} else if s.Examples < 0 {
			notes = append(notes, fmt.Sprintf("eval env %s: split size unknown; its sampler is not counted", name))
		}
	}
	if len(cfg.Eval.Env) == 0 {
		for i, ec := range cfg.Env {
			add(train[i].Name, ec.Ref(), ec.Args, cfg.Eval.NumExamples, cfg.Eval.RolloutsPerExample)
		}
	}
	for _, ec := range cfg.Eval.Env {
		n, k := cfg.Eval.NumExamples, cfg.Eval.RolloutsPerExample
		if ec.NumExamples != nil {
			n = *ec.NumExamples
		}
		if ec.RolloutsPerExample != nil {
			k = *ec.RolloutsPerExample
		}
		name := ec.Name
		if name == "" {
			name = ec.ID
		}
		// As the trainer does, a training env of the same id is reused.
		add(name, ec.Ref(), ec.Args, n, k)
	}
	return train, eval, notes
}

// ProbeEnv measures what s needs to know of environment e's split: its
// turn limit and reply room, the split's size (for eval), and with tok
// the longest and mean rendered prompt among its first examples (unknown
// without). The notes say what could not be read.
func ProbeEnv(s *EnvShape, e env.Environment, tok *tokenizer.Tokenizer, split string, enableThinking *bool) (notes []string) {
	if tl, ok := e.(env.TurnLimiter); ok {
		s.MaxTurns = max(1, tl.MaxTurns())
	}
	s.ReplyTokens = rollout.ReplyTokens(e)
	exs, err := e.Examples(split)
	if err != nil {
		return []string{fmt.Sprintf("env %s: %s split unreadable (%v)", s.Name, split, err)}
	}
	if split == "eval" && (s.Examples < 0 || s.Examples > len(exs)) {
		s.Examples = len(exs)
	}
	if tok == nil {
		return nil
	}
	sum, n := 0, 0
	for _, ex := range exs[:min(len(exs), promptSample)] {
		if ids, err := rollout.RenderEnvPrompt(tok, e, ex.Prompt, enableThinking); err == nil {
			s.PromptTokens = max(s.PromptTokens, len(ids))
			sum, n = sum+len(ids), n+1
		}
	}
	if n > 0 {
		s.MeanPromptTokens = (sum + n - 1) / n
	}
	if len(exs) > promptSample {
		notes = append(notes, fmt.Sprintf("env %s: longest prompt among the first %d of %d %s examples: %d tokens", s.Name, promptSample, len(exs), split, s.PromptTokens))
	}
	return notes
}
