package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/eval"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// optInt and optFloat are flags that remember whether they were given, so
// a command-line value can sit between an eval config's block keys and its
// top-level defaults.
type optInt struct {
	v   int
	set bool
}

func (o *optInt) String() string {
	if o == nil || !o.set {
		return ""
	}
	return strconv.Itoa(o.v)
}

func (o *optInt) Set(s string) error {
	v, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("%q is not an integer", s)
	}
	o.v, o.set = v, true
	return nil
}

func (o *optInt) ptr() *int {
	if !o.set {
		return nil
	}
	return &o.v
}

type optFloat struct {
	v   float64
	set bool
}

func (o *optFloat) String() string {
	if o == nil || !o.set {
		return ""
	}
	return strconv.FormatFloat(o.v, 'g', -1, 64)
}

func (o *optFloat) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("%q is not a number", s)
	}
	o.v, o.set = v, true
	return nil
}

func (o *optFloat) ptr() *float64 {
	if !o.set {
		return nil
	}
	return &o.v
}

// evalOptions are eval's flags; the flag set is rebuilt (and these reset)
// on every call, so in-process tests start from the defaults.
type evalOptions struct {
	model, adapter, device, args, output string
	devices                              string // --devices: a copy of the model on each, the examples split across them
	endpointsPath                        string
	n, r, maxTokens, batch, seed         optInt
	temperature                          optFloat
	passThreshold                        float64
	noThinking                           bool
}

var evalFlags evalOptions

func init() {
	register(&command{
		name:    "eval",
		summary: "evaluate a model (and adapter) on environments: mean reward, pass@k, results JSONL",
		usage:   "ENV_ID -m MODEL [--adapter DIR] [-n N] [-r K] [flags] | CONFIG.toml [-m MODEL]",
		help: `Plays the eval split of an environment (or of every [[eval]] block of an eval
config) with the model and scores each rollout with the environment's rubric.
Prints a table per environment — examples, rollouts per example (k), mean
reward (avg@k), pass@1 (the mean fraction of an example's k rollouts that
are solved), pass@k (the fraction of examples with a solved rollout among k)
and rollouts with errors — then the overall mean reward. A rollout is solved
when its reward reaches --pass-threshold (default 1: fully correct).

Every rollout is written to a JSONL file (default eval-<env>-<time>.jsonl in
the current directory): env, example_id, example_index, rollout, prompt and
completion (chat messages), answer, reward, metrics, errors, finish_reason,
turns, truncated, completion_tokens.

An eval config uses the layout of Prime Intellect Lab's configs/eval/*.toml:
top-level defaults (model, num_examples, rollouts_per_example, max_tokens,
temperature, sampling_args, adapter, seed) and one [[eval]] block per
environment (id or env_id, args or env_args, name, and any default to
override). A block's keys win over the command line, which wins over the
file's top level. Keys for Prime's API clients (endpoint_id, max_concurrent,
save_results, ...) are accepted and ignored with a warning.

A MODEL that is an endpoint_id of configs/endpoints.toml (--endpoints for
another file; the Lab's [[endpoint]] format) is evaluated on that endpoint:
each turn goes to its chat completions API (replicas load-balanced, retries
on 429/5xx, the key read from the variable its key names) and the rubric
runs here. That evaluates a hosted model, or one served by grpo serve or
vLLM.

Defaults are Prime's: 5 examples, 3 rollouts each; max_tokens 512,
temperature 1. Rollouts run in passes of --batch (each pass holds a KV
cache slot per rollout; an example with more rollouts than --batch is split
into several passes); a split that fits one pass is sampled exactly as
the trainer's periodic eval samples it. An eval whose estimated memory (one
pass plus every result, held until the results file is written) exceeds the
free memory is refused before it starts.

Examples:
  grpo eval reverse-text -m Qwen/Qwen3-0.6B -n 20 -r 1
  grpo eval gsm8k -m Qwen/Qwen3-0.6B --adapter runs/gsm8k-1/adapter -n 100 --max-tokens 1024
  grpo eval wordle -m ./my-model --args '{"num_eval_examples": 50}' -r 4 --output wordle.jsonl
  grpo eval configs/eval/llama-3.toml -m Qwen/Qwen3-0.6B      # grpo init's file, another model
  grpo eval wiki-search -m gpt-4.1-mini -n 50        # an endpoint_id of configs/endpoints.toml`,
		flags: func(fs *flag.FlagSet) {
			f := &evalFlags
			*f = evalOptions{}
			for _, name := range []string{"m", "model"} {
				fs.StringVar(&f.model, name, "", "model directory or hub id (required unless the config names one)")
			}
			fs.StringVar(&f.adapter, "adapter", "", "PEFT LoRA adapter directory to apply (e.g. runs/RUN/adapter)")
			fs.Var(&f.n, "n", "examples per environment, from the start of the eval split; -1 for all (default 5)")
			fs.Var(&f.n, "num-examples", "same as -n")
			fs.Var(&f.r, "r", "rollouts per example: the k of pass@k and avg@k (default 3)")
			fs.Var(&f.r, "rollouts-per-example", "same as -r")
			fs.Var(&f.maxTokens, "max-tokens", "longest completion per turn, in tokens (default 512)")
			fs.Var(&f.temperature, "temperature", "sampling temperature; 0 is greedy (default 1)")
			fs.Var(&f.seed, "seed", "sampling seed (default 0)")
			fs.Var(&f.batch, "batch", fmt.Sprintf("rollouts sampled together per pass (default %d)", eval.DefaultBatch))
			fs.StringVar(&f.args, "args", "", `environment args as a JSON object, e.g. '{"num_eval_examples": 50}' (with ENV_ID)`)
			fs.StringVar(&f.output, "output", "", "results JSONL file (default eval-<env>-<time>.jsonl)")
			fs.Float64Var(&f.passThreshold, "pass-threshold", 1, "reward at which a rollout counts as solved for pass@k")
			fs.BoolVar(&f.noThinking, "no-thinking", false, "pass enable_thinking=false to the chat template (Qwen3)")
			fs.StringVar(&f.device, "device", "", `compute backend: "cpu" (the default) or "cuda" in a binary built with -tags cuda`)
			devicesFlag(fs, &f.devices)
			fs.StringVar(&f.endpointsPath, "endpoints", "", "endpoints.toml whose endpoint ids -m may name (default "+endpoints.DefaultPath+" when it exists)")
		},
		run: runEval,
	})
}

func runEval(args []string) error {
	f := &evalFlags
	if len(args) != 1 {
		return usagef("give one environment id or eval config file, e.g. grpo eval reverse-text -m Qwen/Qwen3-0.6B")
	}
	switch {
	case f.n.set && f.n.v < 1 && f.n.v != -1:
		return usagef("-n %d: want at least 1 example, or -1 for the whole eval split", f.n.v)
	case f.r.set && f.r.v < 1:
		return usagef("-r %d: want at least 1 rollout per example", f.r.v)
	case f.maxTokens.set && f.maxTokens.v < 1:
		return usagef("--max-tokens %d: want at least 1", f.maxTokens.v)
	case f.batch.set && f.batch.v < 1:
		return usagef("--batch %d: want at least 1 rollout per pass", f.batch.v)
	case !(f.passThreshold > 0 && f.passThreshold <= 1):
		return usagef("--pass-threshold %v: want a reward in (0, 1]", f.passThreshold)
	}
	if f.temperature.set {
		p := sampler.DefaultParams()
		p.Temperature = f.temperature.v
		var pe *kernels.ParamError
		if err := p.Validate(); errors.As(err, &pe) {
			return usagef("--temperature %v: %s", pe.Value, pe.Want)
		}
	}
	var file *config.EvalFile
	target := args[0]
	if strings.HasSuffix(target, ".toml") {
		if f.args != "" {
			return usagef("--args applies to one environment id; with a config file, put args in its [[eval]] blocks")
		}
		var err error
		if file, err = config.LoadEval(target); err != nil {
			return err
		}
		for _, w := range file.Warnings {
			fmt.Fprintln(os.Stderr, "warning:", w)
		}
	} else {
		var envArgs map[string]any
		if f.args != "" {
			if err := json.Unmarshal([]byte(f.args), &envArgs); err != nil {
				return usagef("--args %q is not a JSON object: %v", f.args, err)
			}
		}
		file = &config.EvalFile{Eval: []config.EvalBlock{{ID: target, Name: target, Args: envArgs}}}
	}
	devices, err := config.DeviceNames(f.device, f.devices) // several: eval.SpecOptions.Devices
	if err != nil {
		return err
	}
	o := config.EvalOverrides{Model: f.model, Adapter: f.adapter, Device: devices[0], NoThinking: f.noThinking,
		NumExamples: f.n.ptr(), RolloutsPerExample: f.r.ptr(),
		Sampling: sampler.Overrides{MaxTokens: f.maxTokens.ptr(), Temperature: f.temperature.ptr()}}
	if f.seed.set {
		s := int64(f.seed.v)
		o.Seed = &s
	}
	specs, err := file.Specs(o)
	if err != nil {
		return usagef("%v", err)
	}
	out := f.output
	if out == "" {
		out = eval.DefaultOutput(target, time.Now())
	}
	reg, err := endpoints.LoadOrDefault(f.endpointsPath)
	if err != nil {
		return fmt.Errorf("--endpoints: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	bar := newEvalProgress(os.Stderr)
	results, runErr, err := eval.StreamRows(out, func(rows func([]eval.Row) error) ([]eval.Result, error) {
		return eval.RunSpecs(ctx, specs, eval.SpecOptions{
			Batch: f.batch.v, Download: newDownloadProgress(os.Stderr), PassThreshold: f.passThreshold,
			OnStart: bar.start, OnDone: bar.done, Rows: rows, ResultsDir: filepath.Dir(out), Endpoints: reg, Devices: devices,
			Notes: func(s string) { fmt.Fprintln(os.Stderr, "warning:", s) },
		})
	})
	bar.finish()
	if err != nil {
		return fmt.Errorf("--output %s: %w", out, err)
	}
	if len(results) > 0 {
		if err := printEvalTable(stdout, results, specs); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "results: %s\n", out)
	}
	if runErr != nil {
		if errors.Is(runErr, context.Canceled) {
			return fmt.Errorf("interrupted after %d of %d environments", len(results), len(specs))
		}
		return runErr
	}
	return nil
}

func printEvalTable(w io.Writer, results []eval.Result, specs []config.EvalSpec) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENV\tEXAMPLES\tK\tROLLOUTS\tREWARD (avg@k)\tPASS@1\tPASS@K\tERRORS")
	for i, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.4f\t%.4f\t%.4f\t%d\n", r.Env, r.Examples, specs[i].RolloutsPerExample, r.Rollouts, r.Reward, r.PassAt1, r.PassAtK, r.Errors)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	n := 0
	for _, r := range results {
		n += r.Rollouts
	}
	_, err := fmt.Fprintf(w, "overall mean reward %.4f over %d rollouts\n", eval.OverallReward(results), n)
	return err
}

// evalProgress is one progress bar per environment on a terminal, and a
// line per environment elsewhere.
type evalProgress struct {
	w   io.Writer
	tty bool
	bar *progressbar.ProgressBar
}

func newEvalProgress(w *os.File) *evalProgress {
	return &evalProgress{w: w, tty: term.IsTerminal(int(w.Fd()))}
}

func (p *evalProgress) start(s config.EvalSpec, total int) {
	p.finish()
	if !p.tty {
		fmt.Fprintf(p.w, "eval %s: %d rollouts (%d per example) of %s\n", s.Name, total, s.RolloutsPerExample, evalSubject(s))
		return
	}
	p.bar = progressbar.NewOptions(total,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(fmt.Sprintf("eval %s of %s", s.Name, evalSubject(s))),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetWidth(24),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
}

// evalSubject is what an eval scores: the model, and the adapter when
// there is one — a base model's score and an adapter's must not read
// alike.
func evalSubject(s config.EvalSpec) string {
	if s.Adapter == "" {
		return s.Model
	}
	return fmt.Sprintf("%s with adapter %s", s.Model, s.Adapter)
}

func (p *evalProgress) done(n int) {
	if p.bar != nil {
		p.bar.Set(n)
	}
}

func (p *evalProgress) finish() {
	if p.bar != nil {
		p.bar.Finish()
		p.bar = nil
	}
}
