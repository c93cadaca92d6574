package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/rundir"
	"github.com/grpo-dev/grpo/trainer"
)

func init() {
	var output, resume, device string
	var force bool // grpo estimate's guard: start even when the estimate does not fit
	register(&command{
		name:    "train",
		summary: "train a LoRA adapter with GRPO from a config file",
		usage:   "CONFIG.toml [--output DIR] [--device cpu|cuda] [--force] | --resume RUN_DIR",
		help: `Runs GRPO with LoRA as the config says (the TOML schema of Prime Intellect
Lab's configs/rl/*.toml plus grpo's [lora], [loss], [optimizer], [checkpoint];
every key is documented in docs/config.md). Shows a progress bar and one line
of metrics per step; writes the run directory:

  config.toml  metrics.jsonl  eval.jsonl  log.txt  rewards.png
  checkpoints/step-N/  (adapter, optimizer state, data position)
  adapter/             (the final PEFT adapter: vLLM and PEFT load it as it is)

Ctrl-C writes a checkpoint of the last finished step and exits; a second
Ctrl-C exits at once. Resume with --resume RUN_DIR: the run continues from its
newest checkpoint and produces the same metrics as an uninterrupted run.

Examples:
  grpo train examples/demo.toml
  grpo train configs/rl/gsm8k.toml --output runs/gsm8k-lr1e-4
  grpo train --resume runs/gsm8k-lr1e-4`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&output, "output", "", "run directory (default runs/<name>-<time>)")
			fs.StringVar(&resume, "resume", "", "continue the run in this directory from its newest checkpoint")
			fs.StringVar(&device, "device", "", "override the config's device: cpu, or cuda in a binary built with -tags cuda")
			fs.BoolVar(&force, "force", false, "start even when the memory estimate (grpo estimate) exceeds the free memory")
		},
		run: func(args []string) error {
			var path string
			opts := []trainer.Option{trainer.WithProgressEvents(newTrainProgress(os.Stderr)), trainer.WithDownloadProgress(newDownloadProgress(os.Stderr))}
			switch {
			case resume != "" && len(args) > 0:
				return usagef("give either CONFIG or --resume RUN_DIR, not both (a resumed run uses its own config.toml)")
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
			cfg, err := config.Parse(text, path)
			if err != nil {
				return err
			}
			if device != "" {
				cfg.Device = device
			}
			if err := cfg.ValidateEnvs(config.RegistryEnvCheck); err != nil {
				return err
			}
			for _, w := range cfg.Warnings {
				fmt.Fprintln(os.Stderr, "warning:", w)
			}
			opts = append(opts, trainer.WithConfigText(text))
			ctx, stop := interruptContext()
			defer stop()
			// grpo estimate's guard (estimate.go): refuse a run that cannot fit.
			if !force {
				if err := checkFits(ctx, cfg); err != nil {
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
