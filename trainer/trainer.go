package trainer

import (
	"context"
	"errors"
	"fmt"
	"github.com/grpo-dev/grpo/curriculum"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/env"
	_ "github.com/grpo-dev/grpo/env/builtins" // registers every environment grpo ships, so configs name them by id
	"github.com/grpo-dev/grpo/estimate"
	"github.com/grpo-dev/grpo/internal/atomicfile"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/loader"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/model/hub"
	"github.com/grpo-dev/grpo/optim"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/rundir"
	"github.com/grpo-dev/grpo/tokenizer"
	"github.com/grpo-dev/grpo/trainer/health"
	"github.com/grpo-dev/grpo/trainer/replicas"
	"github.com/grpo-dev/grpo/update"
)

// Trainer runs GRPO with LoRA for one config. Build it with New and start
// it with Run.
type Trainer struct {
	cfg  *config.Config
	opts options
}

type options struct {
	envs       []namedEnv
	output     string
	resume     bool
	progress   io.Writer
	events     func(ProgressEvent)
	download   func(hub.FileProgress)
	onStep     func(StepResult)
	configText []byte
	backend    kernels.Backend
	// replicaBackends are WithBackends' after the first.
	replicaBackends []kernels.Backend
	// samplerPerCall plays every rollout and eval call on a new sampler.
	samplerPerCall bool
}

type namedEnv struct {
	env    env.Environment
	weight float64
}

// Option configures a Trainer.
type Option func(*options)

// WithEnvironment trains on e: it replaces the config's [[env]] block with
// the same id, or joins the mixture with weight 1 if there is none.
func WithEnvironment(e env.Environment) Option {
	return func(o *options) { o.envs = append(o.envs, namedEnv{env: e, weight: 1}) }
}

// WithOutput sets the run directory (default runs/<name>-<time>).
func WithOutput(dir string) Option { return func(o *options) { o.output = dir } }

// WithResume continues the run in dir from its latest checkpoint.
func WithResume(dir string) Option {
	return func(o *options) { o.output, o.resume = dir, true }
}

// WithProgress writes a line per step, and the warnings and eval results
// between steps, to w as plain text.
func WithProgress(w io.Writer) Option { return func(o *options) { o.progress = w } }

// WithProgressEvents calls f as the run starts, after every step, for every
// line between steps and when the loop ends, so that a display (the CLI's
// progress bar) can draw the run.
func WithProgressEvents(f func(ProgressEvent)) Option { return func(o *options) { o.events = f } }

// WithDownloadProgress reports the download of the model, if it is not in
// the cache yet (hub.Options.Progress).
func WithDownloadProgress(f func(hub.FileProgress)) Option {
	return func(o *options) { o.download = f }
}

// WithStepCallback calls f after every step with its metrics.
func WithStepCallback(f func(StepResult)) Option { return func(o *options) { o.onStep = f } }

// WithConfigText records the config file's text as the run's config.toml.
func WithConfigText(text []byte) Option { return func(o *options) { o.configText = text } }

// WithBackend runs on be instead of opening the config's device.
func WithBackend(be kernels.Backend) Option { return func(o *options) { o.backend = be } }

// WithBackends trains data parallel on bes, one replica each, instead of
// opening the config's devices (tests: emu devices, which no config names).
func WithBackends(bes ...kernels.Backend) Option {
	return func(o *options) { o.backend, o.replicaBackends = bes[0], bes[1:] }
}

// WithSamplerPerCall plays every rollout and eval call of the run on a
// new sampler, allocated and closed around the call, as runs did before
// the sampler was kept across steps: for comparisons (tests, benchmarks).
func WithSamplerPerCall() Option { return func(o *options) { o.samplerPerCall = true } }

// StepResult is one step's metrics, as written to metrics.jsonl.
type StepResult struct {
	Step    int
	Metrics map[string]float64
}

// New validates cfg and returns a Trainer for it.
func New(cfg *config.Config, opts ...Option) *Trainer {
	t := &Trainer{cfg: cfg}
	for _, o := range opts {
		o(&t.opts)
	}
	return t
}

// ErrInterrupted is returned by Run when ctx was cancelled; the run was
// checkpointed at its last completed step and can be resumed.
var ErrInterrupted = errors.New("training interrupted")

// Result summarises a finished (or interrupted) run.
type Result struct {
	RunDir  string // "" on a rank other than 0 of several, which writes none
	Steps   int    // completed steps
	Adapter string
}

// run is the state of a Run call.
type run struct {
	cfg     *config.Config
	opts    options
	dir     *rundir.Dir
	sinks   *rundir.Sinks // metrics.jsonl, eval.jsonl, tfevents, W&B
	ckDir   string
	modelID string
	be      kernels.Backend
	tok     *tokenizer.Tokenizer
	base    *model.Model
	policy  *model.Model
	engine  rollout.PolicyEngine // where rollouts are generated (engine.go)
	reps    *replicas.Set        // one per device; the first is policy, adapter, opt (devices.go)
	world   *replicas.World      // the job's processes under srun/torchrun; nil: one
	layout  *replicas.Layout     // data or expert parallel over the devices, chosen before loading
	resumed string               // the checkpoint the run resumed from; "" for none
	// producer plays them ahead of the trainer (max_async_level); nil: each step plays its own.
	producer *rollout.Producer
	adapter  *lora.Adapter
	opt      *optim.AdamW
	envs     []trainEnv
	sched    *curriculum.Schedule
	splits   [][]env.Example      // each env's train split, which sched indexes
	pools    *curriculum.Pools    // [buffer]'s difficulty pools; nil without
	overlap  *rollout.OverlapPlan // which envs hide their replies behind generation
	health   health.State
	step     int
	seed     uint64
	bar      *progress
	// kvBlocks bounds the sampler's KV pool (planKVPool); 0: unbounded.
	kvBlocks int
	// keepSampler lets the in-process sampler live through the policy
	// update (planKVPool); else it is freed before each update.
	keepSampler bool
	// notes are warnings found during setup, shown once the display starts.
	notes []string
	// freeMemory is the device's before the weights loaded, for
	// recompute = "auto" (recompute.go).
	freeMemory *estimate.Available
	// maxPerStep is the most examples a step of this run has drawn, over
	// its resumes (checkpointState.MaxExamplesPerStep).
	maxPerStep int
}

type trainEnv struct {
	name   string
	env    env.Environment
	weight float64
}

// Run trains until max_steps, writing the run directory as it goes.
func (t *Trainer) Run(ctx context.Context) (*Result, error) {
	r, err := t.setup(ctx)
	if err != nil {
		return nil, err
	}
	defer r.dir.Close()
	defer r.sinks.End(rundir.Failed) // a no-op after the loop's own End
	defer r.closeEngine()
	res := &Result{RunDir: r.world.RunDir(r.dir.Path)}
	if r.step == 0 && t.cfg.Eval.Interval > 0 && !t.cfg.Eval.SkipFirstStep {
		if err := r.evaluate(ctx); err != nil {
			return res, r.stop(err)
		}
	}
	for r.step < t.cfg.MaxSteps {
		if err := r.guard(r.step+1, func() error { return r.stepAndAfter(ctx) }); err != nil {
			res.Steps = r.step
			return res, r.stop(err)
		}
	}
	res.Steps = r.step
	r.world.Finished()
	if err := r.checkpoint(); err != nil {
		return res, err
	}
	res.Adapter = filepath.Join(r.dir.Path, "adapter")
	if err := r.saveFinalAdapter(res.Adapter); err != nil {
		return res, err
	}
	// The plot first, since W&B gets it at End; the "finished" line last,
	// since `grpo runs` reads the run's state from log.txt's last line.
	plotErr := rundir.PlotRewards(r.dir.Path, 10)
	endErr := r.sinks.End(rundir.Finished)
	r.bar.finish()
	r.dir.Logf("finished %d steps; adapter in %s", r.step, res.Adapter)
	return res, errors.Join(plotErr, endErr)
}

// stepAndAfter runs one training step, then the eval and checkpoint due
// after it.
func (r *run) stepAndAfter(ctx context.Context) error {
	if err := r.trainStep(ctx); err != nil {
		return err
	}
	if iv := r.cfg.Eval.Interval; iv > 0 && r.step%iv == 0 {
		if err := r.evaluate(ctx); err != nil {
			return err
		}
	}
	if iv := r.cfg.Checkpoint.Interval; iv > 0 && r.step%iv == 0 && r.step < r.cfg.MaxSteps {
		return r.checkpoint()
	}
	return nil
}

// stop handles an error that ended the loop: a cancelled context writes a
// checkpoint of the last completed step and returns ErrInterrupted.
func (r *run) stop(err error) error {
	r.bar.finish()
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if cerr := r.checkpoint(); cerr != nil {
			return fmt.Errorf("interrupted, and the checkpoint failed: %w", cerr)
		}
		rundir.PlotRewards(r.dir.Path, 10)
		r.sinks.End(rundir.Interrupted)
		r.dir.Logf("interrupted after step %d; resume with grpo train --resume %s", r.step, r.dir.Path)
		return fmt.Errorf("%w after step %d; resume with 'grpo train --resume %s'", ErrInterrupted, r.step, r.dir.Path)
	}
	r.sinks.End(rundir.Failed)
	r.dir.Logf("error: %v", err)
	return err
}

func (r *run) checkpoint() error {
	if steps, _ := rundir.Checkpoints(r.ckDir); len(steps) > 0 && steps[len(steps)-1] == r.step {
		return nil
	}
	st := checkpointState{Step: r.step, Seed: r.seed, Cursors: r.sched.Cursors, Health: r.health, MaxExamplesPerStep: r.maxPerStep, Overlap: r.overlap.On}
	if r.pools != nil {
		st.Pools = r.pools.State()
	}
	if err := saveCheckpoint(r.ckDir, st, r.reps, r.modelID, r.opts.configText, r.cfg.Checkpoint.KeepLast); err != nil {
		return err
	}
	r.dir.Logf("checkpoint step %d", r.step)
	return nil
}

func (r *run) saveFinalAdapter(path string) error {
	return r.reps.SaveAdapter(path, r.modelID)
}

// setup resolves and loads everything, creating or reopening the run
// directory.
func (t *Trainer) setup(ctx context.Context) (_ *run, err error) {
	cfg := t.cfg
	// Environments given in Go join the mixture as [[env]] blocks of
	// weight 1 unless a block already names them.
	for _, ne := range t.opts.envs {
		cfg = cfg.AddEnv(ne.env.ID(), ne.weight)
	}
	devices, err := cfg.ValidateTrainDevices() // several: data parallel (openReplicas)
	if err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, opts: t.opts, seed: uint64(cfg.Seed), modelID: cfg.Model}
	if r.world, err = replicas.Meet(ctx, t.opts.backend, devices[0], max(len(devices), 1+len(t.opts.replicaBackends)), 0); err != nil {
		return nil, err
	}
	out := t.opts.output
	if out == "" {
		out = rundir.DefaultPath(cfg.Name, time.Now())
	}
	if r.dir, err = r.world.Dir(out, t.opts.resume); err != nil {
		r.world.Close(err)
		return nil, err
	}
	// The directory is locked from here on; a setup that fails says why
	// in log.txt — grpo runs list reads a run's state from its last line,
	// and without one a run that never started shows as running, then as
	// interrupted — and lets go.
	defer func() {
		if err != nil {
			r.dir.Logf("error: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
			r.layout.Close() // the devices it opened, unless the replicas took them
			r.dir.Close()
			r.world.Close(err)
		}
	}()
	r.ckDir = filepath.Join(r.dir.Path, cfg.Checkpoint.Dir)
	if err := os.MkdirAll(r.ckDir, 0o755); err != nil {
		return nil, err
	}
	r.maxPerStep = cfg.BatchSize / cfg.RolloutsPerExample
	// A checkpoint or file write killed midway left its temporary; the
	// lock is held, so none is a live writer's.
	for _, d := range []string{r.ckDir, r.dir.Path} {
		removed, err := atomicfile.RemoveStale(d)
		if err != nil {
			return nil, fmt.Errorf("removing what an interrupted write left in %s: %w", d, err)
		}
		for _, p := range removed {
			r.dir.Logf("removed %s, left by a write that was interrupted", p)
		}
	}
	if !t.opts.resume && t.opts.configText != nil {
		if err := atomicfile.WriteFile(filepath.Join(r.dir.Path, "config.toml"), t.opts.configText, 0o644); err != nil {
			return nil, err
		}
	}
	r.be = t.opts.backend
	if r.be == nil {
		if r.be, err = loader.OpenBackend(config.OpenName(devices[0])); err != nil {
			return nil, err
		}
	}
	if err := r.readFreeMemory(); err != nil {
		return nil, err
	}
	logf := func(line string) { r.dir.Logf("%s", line) }
	if r.layout, err = replicas.ChooseLayout(ctx, replicas.LayoutSpec{Config: cfg, Devices: devices, First: r.be, Backends: t.opts.replicaBackends, Download: t.opts.download, World: r.world, Log: logf}); err != nil {
		return nil, err
	}
	// Under expert parallelism device 0 loads its share of the experts.
	l, err := loader.Open(ctx, loader.Spec{Model: cfg.Model, Backend: r.be, Download: t.opts.download, Experts: r.layout.Expert(0), Log: logf})
	if err != nil {
		return nil, err
	}
	r.tok, r.base = l.Tokenizer, l.Base
	if err := r.setupEnvs(); err != nil {
		return nil, err
	}
	if err := r.chooseRecompute(); err != nil {
		return nil, err
	}
	r.checkContext()
	if err := r.world.Restore(&r.ckDir, filepath.Join(out, cfg.Checkpoint.Dir), r.setupState); err != nil {
		return nil, err
	}
	if err := r.openEngine(ctx); err != nil {
		return nil, err
	}
	if err := r.openReplicas(ctx, devices); err != nil {
		return nil, err
	}
	r.planKVPool()
	r.bar = newProgress(t.opts.progress, t.opts.events, cfg.MaxSteps, r.step)
	for _, n := range r.notes {
		r.bar.note("%s", n)
	}
	r.dir.Logf("model %s (%s, %.1fM parameters) on %s; LoRA rank %d on %v, %d trainable parameters",
		cfg.Model, r.base.Config.ModelType, float64(r.base.Config.ParamCount())/1e6, r.be.Name(), cfg.LoRA.Rank, cfg.LoRA.TargetModules, r.adapter.NumParams())
	if err := r.openSinks(); err != nil {
		return nil, err
	}
	return r, nil
}

// setupEnvs builds the training mixture from [[env]] and WithEnvironment.
func (r *run) setupEnvs() error {
	given := map[string]env.Environment{}
	for _, ne := range r.opts.envs {
		given[ne.env.ID()] = ne.env
	}
	for i, ec := range r.cfg.Env {
		e, ok := given[ec.ID]
		if !ok {
			var err error
			if e, err = env.New(ec.Ref(), ec.Args); err != nil {
				return fmt.Errorf("[[env]] %d (id = %q): %w", i+1, ec.ID, err)
			}
		}
		name := ec.Name
		if name == "" || name == ec.ID {
			name = e.ID() // the canonical id, also for an environment given as a path
		}
		r.envs = append(r.envs, trainEnv{name: name, env: e, weight: ec.Weight})
	}
	var weights []float64
	var splits [][]env.Example
	for _, te := range r.envs {
		exs, err := te.env.Examples("train")
		if err != nil {
			return fmt.Errorf("env %s: %w", te.name, err)
		}
		weights = append(weights, te.weight)
		splits = append(splits, exs)
	}
	var err error
	sizes := make([]int, len(splits))
	for e, split := range splits {
		sizes[e] = len(split)
	}
	r.splits = splits
	r.overlap = rollout.NewOverlapPlan(len(r.envs))
	r.sched, err = curriculum.NewSchedule(r.seed, weights, sizes)
	if err == nil && r.cfg.Buffer.Active() {
		r.pools = curriculum.New(r.cfg.Buffer, sizes)
	}
	return err
}

// setupState creates the adapter and optimizer, or restores them from the
// run's checkpoint when resuming (resume.go).
func (r *run) setupState() error {
	var err error
	if r.opts.resume {
		err = r.resumeState()
	} else {
		err = r.freshState()
	}
	if err != nil {
		return err
	}
	r.policy = r.base.WithAdapter(r.adapter)
	return nil
}

func (r *run) newOptimizer() error {
	var err error
	r.opt, err = optim.NewAdamW(r.be, update.OptimizerParams(r.adapter), r.cfg.Optimizer)
	return err
}
