package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/estimate"
	"github.com/grpo-dev/grpo/rundir"
	"github.com/grpo-dev/grpo/trainer"
)

func init() {
	var output, resume, device, devices string
	var force bool   // grpo estimate's guard: start even when the estimate does not fit
	var verbose bool // report the CPU backend's BLAS and kernels (cpureport.go)
	var overrides []config.Override
	register(&command{
		name:    "train",
		summary: "train a LoRA adapter with GRPO from a config file",
		usage:   "CONFIG.toml [--output DIR] [--max-steps N] [--batch-size N] [--seed N] [--set KEY=VALUE]... [--device cpu|cuda] [--devices cuda:N] [--force] [--verbose] | --resume RUN_DIR",
		help: `Runs GRPO with LoRA as the config says (the TOML schema of Prime Intellect
Lab's configs/rl/*.toml plus grpo's [lora], [loss], [optimizer], [checkpoint];
every key is documented in docs/config.md). Shows a progress bar and one line
of metrics per step; writes the run directory:

  config.toml  metrics.jsonl  eval.jsonl  log.txt  rewards.png
  checkpoints/step-N/  (adapter, optimizer state, data position)
  adapter/             (the final PEFT adapter: vLLM and PEFT load it as it is)
  inference/step-N/    (with [inference]: the adapter the server has loaded)

--max-steps, --batch-size, --seed and --set KEY=VALUE override the config's
keys: KEY is a dotted key of the schema (sampling.temperature, eval.interval,
env[0].args.num_train_examples), VALUE a TOML value (a bare word is a
string). They are checked like the file's keys, each problem naming its flag,
and written into the run directory's config.toml, so --resume keeps them.

Rollouts (and evals) are generated in this process, or, with [inference]
url = "http://HOST:PORT/v1" (or endpoint_id = an id of configs/endpoints.toml),
on an OpenAI-compatible server: grpo serve MODEL, or vLLM started with
--enable-lora --max-lora-rank R and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True.
Before each step's rollouts the adapter of the step before is written to
inference/step-N and loaded on the server as step-N (the server must read that
path); each turn is a completions request on token ids with a per-rollout
seed, and the server's log-probs are the behaviour log-probs. The server must
be up when the run starts. On grpo serve on the CPU the run logs the
in-process run's metrics; see docs/inference.md.

--devices cuda:0-7 (or cpu:0-1, or the devices key) trains data parallel: a
replica per device, a step's groups split across them, one gradient
all-reduce (NCCL); each device's share must fit it (grpo estimate --devices).

Ctrl-C writes a checkpoint of the last finished step and exits; a second
Ctrl-C exits at once. Resume with --resume RUN_DIR: the run continues from its
newest checkpoint and produces the same metrics as an uninterrupted run.

Examples:
  grpo train examples/demo.toml
  grpo train configs/rl/gsm8k.toml --output runs/gsm8k-lr1e-4
  grpo train configs/rl/gsm8k.toml --max-steps 5 --set sampling.temperature=0.7
  grpo train configs/rl/gsm8k.toml --set inference.url=http://127.0.0.1:8000/v1
  grpo train --resume runs/gsm8k-lr1e-4`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&output, "output", "", "run directory (default runs/<name>-<time>)")
			fs.StringVar(&resume, "resume", "", "continue the run in this directory from its newest checkpoint")
			fs.StringVar(&device, "device", "", "override the config's device: cpu, or cuda in a binary built with -tags cuda")
			devicesFlag(fs, &devices)
			fs.BoolVar(&force, "force", false, "start even when the memory estimate (grpo estimate) exceeds the free memory")
			overrides = nil // flags are set up afresh for every call (and test)
			for _, k := range []struct{ flag, key string }{{"max-steps", "max_steps"}, {"batch-size", "batch_size"}, {"seed", "seed"}} {
				fs.Func(k.flag, "override the config's "+k.key, func(v string) error {
					overrides = append(overrides, config.Override{Flag: "--" + k.flag + " " + v, Path: k.key, Value: v})
					return nil
				})
			}
			fs.Func("set", "override a config key: --set KEY=VALUE (repeatable), e.g. --set sampling.temperature=0.7", func(v string) error {
				o, err := config.ParseSet(v)
				overrides = append(overrides, o)
				return err
			})
			fs.BoolVar(&verbose, "verbose", false, "report the backend's BLAS (OpenBLAS core, threads) and elementwise kernels")
		},
		run: func(args []string) error {
			var path string
			opts := []trainer.Option{trainer.WithProgressEvents(newTrainProgress(os.Stderr)), trainer.WithDownloadProgress(newDownloadProgress(os.Stderr))}
			switch {
			case resume != "" && len(args) > 0:
				return usagef("give either CONFIG or --resume RUN_DIR, not both (a resumed run uses its own config.toml)")
			case resume != "" && len(overrides) > 0:
				return usagef("%s: overrides go with a config file; a resumed run keeps the config it started with (its config.toml)", overrides[0].Flag)
			case resume != "":
				if err := rundir.CheckRun(resume); err != nil {
					return err
				}
				path = filepath.Join(resume, "config.toml")
				opts = append(opts, trainer.WithResume(resume))
			case len(args) == 1:
				path = args[0]
				if output != "" {
					opts = append(opts, trainer.WithOutput(output))
				}
			default:
				return usagef("give one config file, e.g. grpo train examples/demo.toml")
			}
			text, err := os.ReadFile(path)
			if err != nil {
				return fmt.Errorf("config: %w", err)
			}
			// Every problem of the file, its overrides and its env ids at once.
			cfg, err := config.ParseWith(text, path, config.ParseOptions{Overrides: overrides, Envs: env.Check})
			if err != nil {
				return err
			}
			if device != "" {
				cfg.Device = device
			}
			if err := cfg.UseDevicesFlag(devices); err != nil { // several: data parallel
				return err
			}
			for _, w := range cfg.Warnings {
				fmt.Fprintln(os.Stderr, "warning:", w)
			}
			cpuReport(os.Stderr, cfg.Device, verbose)
			// The run records the config as it runs, overrides written in.
			opts = append(opts, trainer.WithConfigText(cfg.Text()))
			ctx, stop := interruptContext()
			defer stop()
			// grpo estimate's guard (estimate.CheckRun): refuse a run that cannot fit.
			if !force {
				if err := estimate.CheckRun(ctx, cfg, "pass --force"); err != nil {
					return err
				}
			}
			res, err := trainer.New(cfg, opts...).Run(ctx)
			if err != nil {
				if errors.Is(err, trainer.ErrInterrupted) {
					return interruptedExit(ctx, err) // 130/143, so `grpo train … && grpo merge …` stops
				}
				return err
			}
			return printRunSummary(res)
		},
	})
}
