package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/estimate"
	"github.com/grpo-dev/grpo/kernels"
)

func init() {
	var noMeasure, asJSON bool
	var shape, device, devices string
	register(&command{
		name:    "estimate",
		summary: "estimate a config's memory and time per step before training",
		usage:   "CONFIG.toml [--no-measure] [--json] [--shape NAME] [--device cpu|cuda] [--devices cuda:0-7]",
		help: `Prints the parameters, the memory the run will hold (base weights, LoRA
parameters and AdamW moments, the sampler's paged KV cache for batch_size
rollouts of prompt + max_tokens — cut to the free memory when all of them do
not fit at once, with the rollouts it holds at once and the passes a step then
takes — and one training micro-batch's activations), the peak and whether it
fits in the free memory, the recompute settings (each one's training memory,
peak and extra FLOPs per micro-batch; the config's recompute, or with "auto"
the least extra arithmetic that fits, sizes the training items), and a time
per step from a short measured
warm-up on the real model (random weights of the same shape when the weights
are not downloaded). The exit code is 0 whether or not the run fits;
'grpo train' refuses to start a run that does not fit unless --force.

With several devices (--devices or the config's devices key) it prints the
plan per device, each training its share of a step's groups, and exits 1
naming the first device that does not fit and its largest item: data
parallel when the whole model fits each device, else, for a mixture-of-
experts model, expert parallel (EP × DP = devices) with the fewest devices
per expert group that fits; a "why" line names the sizes that decided.

The model's shape comes from its local directory or the Hugging Face cache, or
else from its config.json alone; --shape estimates for a named shape without
reading the model at all. Prompt lengths come from rendering the environments'
examples with the model's tokenizer when it is at hand.

Examples:
  grpo estimate examples/configs/gsm8k.toml
  grpo estimate examples/configs/gsm8k.toml --shape qwen3-1.7b --no-measure
  grpo estimate my.toml --json`,
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&noMeasure, "no-measure", false, "skip the timed warm-up (minutes for a large model on the CPU)")
			fs.BoolVar(&asJSON, "json", false, "print the estimate as JSON")
			fs.StringVar(&shape, "shape", "", "estimate for a named model shape instead of the config's model (grpo bench --help lists them)")
			fs.StringVar(&device, "device", "", "override the config's device: cpu or cuda")
			fs.StringVar(&devices, "devices", "", `the devices of a multi-device run, overriding the config's devices: "cuda:0-7", "cuda:0,2"`)
		},
		run: func(args []string) error {
			if len(args) != 1 {
				return usagef("give one config file, e.g. grpo estimate examples/configs/gsm8k.toml")
			}
			cfg, err := loadTrainConfig(args[0])
			if err != nil {
				return err
			}
			ctx, stop := interruptContext()
			defer stop()
			ids, err := cfg.DeviceList()
			if devices != "" {
				ids, err = config.DevicesFromList("--devices "+devices, devices)
			}
			if err != nil {
				return err
			}
			if len(ids) > 1 && !asJSON {
				return estimateDevices(ctx, cfg, ids, estimate.RunOptions{Shape: shape, Measure: !noMeasure, Log: os.Stderr})
			} else if len(ids) > 1 {
				return usagef("--json prints one device's estimate: drop --json to see the plan of %d devices", len(ids))
			}
			if device == "" {
				device = ids[0].Backend
			}
			e, err := estimate.Run(ctx, cfg, estimate.RunOptions{
				Shape: shape, Device: device, Measure: !noMeasure, Log: os.Stderr})
			if err != nil {
				return estimate.WithShapeHint(err, cfg.Model, shape)
			}
			if asJSON {
				return e.WriteJSON(os.Stdout)
			}
			writeEstimate(os.Stdout, e)
			return nil
		},
	})
}

// loadTrainConfig parses and checks a run config as grpo train does.
func loadTrainConfig(path string) (*config.Config, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return config.ParseWith(text, path, config.ParseOptions{Envs: env.Check})
}

func writeEstimate(w io.Writer, e *estimate.Estimate) {
	fmt.Fprintf(w, "model %s on %s: %s base parameters, %s trainable (LoRA)\n\n",
		e.Model, e.Device, commas(e.BaseParams), commas(e.TrainableParams))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "phase\titem\tsize\tdetail")
	for _, it := range e.Items {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", it.Phase, it.Name, estimate.FormatBytes(it.Bytes), it.Detail)
	}
	for _, ph := range []string{estimate.PhaseSampling, estimate.PhaseTraining, estimate.PhaseEval} {
		if b := e.PhaseBytes(ph); b > 0 {
			fmt.Fprintf(tw, "\tresident + %s\t%s\t\n", ph, estimate.FormatBytes(e.PhaseBytes(estimate.PhaseResident)+b))
		}
	}
	fmt.Fprintf(tw, "\tpeak (%s)\t%s\t\n", e.PeakPhase, estimate.FormatBytes(e.Peak))
	tw.Flush()
	if len(e.KV) > 0 {
		fmt.Fprintln(w, "\nKV cache plan:")
		for _, p := range e.KV {
			fmt.Fprintf(w, "  - %s\n", p.Summary())
		}
	}
	writeRecompute(w, e)
	if e.Time != nil {
		fmt.Fprintf(w, "\ntime: %s\n", e.Time.Summary())
	}
	fmt.Fprintln(w, "\nassumptions:")
	notes := e.Assumptions
	if e.Time != nil {
		notes = append(append([]string(nil), notes...), e.Time.Assumptions...)
	}
	for _, a := range notes {
		fmt.Fprintf(w, "  - %s\n", a)
	}
	fmt.Fprintf(w, "\n%s\n", e.Verdict())
}

// writeRecompute is the recompute table: each policy's (and the chosen
// setting's) training memory, the run's peak under it, whether that fits,
// and what it recomputes per micro-batch; the chosen one marked.
func writeRecompute(w io.Writer, e *estimate.Estimate) {
	fmt.Fprintf(w, "\nrecompute = %s (%s)\n", e.RecomputeSetting, e.RecomputeWhy)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := "\tsetting\ttraining\tpeak\tfits\textra FLOPs per micro-batch"
	if e.Time != nil {
		header += "\ttrain time per step"
	}
	fmt.Fprintln(tw, header)
	for _, c := range e.Recomputes {
		mark, fits := "", "?"
		if c.Setting == e.RecomputeSetting {
			mark = "→"
		}
		if e.Available != nil && e.Available.Known {
			fits = map[bool]string{true: "yes", false: "no"}[c.Peak <= e.Available.Bytes]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s (+%.3g%% of %s)", mark, c.Setting, estimate.FormatBytes(c.TrainingBytes),
			estimate.FormatBytes(c.Peak), fits, flops(c.ExtraFLOPs), 100*c.ExtraFLOPs/e.TrainFLOPs, flops(e.TrainFLOPs))
		if e.Time != nil {
			fmt.Fprintf(tw, "\t%s", e.TrainTime(c).Round(time.Millisecond))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// flops writes a FLOP count as 3.2 TFLOP.
func flops(f float64) string {
	for _, u := range []struct {
		scale float64
		name  string
	}{{1e15, "PFLOP"}, {1e12, "TFLOP"}, {1e9, "GFLOP"}, {1e6, "MFLOP"}} {
		if f >= u.scale {
			return fmt.Sprintf("%.3g %s", f/u.scale, u.name)
		}
	}
	return fmt.Sprintf("%.3g FLOP", f)
}

// commas writes 596049920 as 596,049,920.
func commas(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// estimateDevices prints a multi-device plan: the first device's full
// estimate (the others differ only in their share's sampling items and,
// under expert parallelism, their experts), the layout and why, then a
// line per device.
func estimateDevices(ctx context.Context, cfg *config.Config, ids []kernels.DeviceID, o estimate.RunOptions) error {
	plan, err := estimate.PlanDevices(ctx, cfg, ids, o)
	if err != nil {
		return estimate.WithShapeHint(err, cfg.Model, o.Shape)
	}
	writeEstimate(os.Stdout, plan.Shares[0].Estimate)
	fmt.Printf("\n%s\nwhy: %s\n", plan.Layout(cfg.BatchSize/cfg.RolloutsPerExample), plan.Why)
	for _, s := range plan.Shares {
		fmt.Println("  " + s.Summary())
	}
	return estimate.Misfit(plan.Shares)
}
