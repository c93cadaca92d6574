package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"text/tabwriter"

	"github.com/grpo-dev/grpo/bench"
	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/estimate/perf"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/loader"
	"github.com/grpo-dev/grpo/model"
)

func init() {
	var o benchOpts
	register(&command{
		name:    "bench",
		summary: "measure forward, decode and matmul throughput on this machine",
		usage:   "[--model DIR | --shape NAME] [--prefill N] [--decode N] [--batch B] [--profile]",
		help: `Measures, on the chosen backend:
  prefill   tokens/s of the prompt forward of --batch sequences of --prefill tokens,
            with logits at each sequence's last position only (as generation
            needs; --prefill-logits all: at every position, as scoring and
            training need), in chunks of at most --prefill-chunk tokens
  decode    tokens/s of --decode single-token steps for --batch sequences at once
            (each sequence at its own position) through the static
            decode step the sampler takes (model.Decoder): each step's token
            drawn on the device (SampleStream at --temperature) and fed back
            there, one graph launch per step on cuda; 8 bytes per sequence
            leave the device, not logits
Prefill and decode run over the sampler's KV cache: paged, blocks of 16
positions, in the backend's KV dtype (bf16 on cuda and emu, f32 on cpu).
With --group G the --batch sequences are --batch/G prompts of G rollouts
each, as a GRPO step samples them: each prompt prefilled once (the prefill
figure counts its tokens once) and its KV blocks forked into the group's
other slots, which copy the last, partly filled block on their first write;
the decode step reads a group's whole prompt blocks once per group, and
the decode HBM figure counts them once.
  train     tokens/s of one LoRA train step (forward, log-probs, backward to the
            LoRA parameters) over --train-seqs sequences of --train-len tokens,
            rank --lora-rank on all seven projections, activations kept or
            recomputed in the backward as --recompute says
  matmul    GFLOP/s of 512x512x512 and 512x2048x512 products
Random weights (--shape) are bf16 on cuda and emu, as loaded checkpoints are
(--dtype f32 measures the f32 path); the train step runs in micro-batches
whose logits stay within the backends' 2^31-element limit.
Each figure is the best of --repeat runs after one warm-up. On cuda (and
emu) --json adds "counts": what the backend asked of its device for one
decode step, one whole prefill and one train micro-batch, after warm-up
(kernel and graph launches, allocations, frees, host syncs, host-device
copies and bytes, bytes of weights read by GEMMs, FLOPs of the matrix
work executed; the decode step's KV bytes from the sequences' lengths; the
whole train step's FLOPs). On a GPU the figures add MFU (model FLOPs) and
HFU (the counted FLOPs, recompute included) against the peaks. BENCHMARKS.md puts
them next to PyTorch on the same machine (scripts/bench.sh runs both).

Examples:
  grpo bench --shape qwen3-30m
  grpo bench --model testdata/models/qwen3-tiny --prefill 128 --decode 32
  grpo bench --shape qwen3-0.6b --device cuda --batch 128 --json
  grpo bench --shape qwen3-30m --grpo-step --repeat 3 --cpuprofile step.pprof

--grpo-step measures whole GRPO steps instead, through the trainer's code:
the sampler generating --step-rollouts rollouts of each of --step-prompts
random prompts of --step-prompt-len tokens, exactly --step-tokens tokens each
(no stop tokens), group advantages of a synthetic reward, loss.PolicyGradient
and one AdamW update of a rank --lora-rank adapter on all seven projections;
it reports the best generate, train and whole-step seconds of --repeat steps
after a warm-up (scripts/grpo_step_torch.py is the PyTorch twin).

--profile adds, after the figures, a kernel profile of one more prefill,
decode step (once as the graph replay the figure times, once op by op to see
its kernels, which adds the launch gaps a graph removes) and train micro-batch,
or with --grpo-step one more step's generate and train (cuda and emu; on cpu it
is an error: the cpu backend launches no kernels). Each op — kernel, cuBLAS
GEMM ("gemm bf16 TN m x n x k", column-major), memset, copy, graph — runs
between two CUDA timing events read back at the phase's end. Per phase: the
wall time split into kernel time, GPU idle between ops and host time outside
the GPU's span, then the 15 entries with the most time (launches, total ms, % of
wall, mean µs); --json adds "profile" with every entry and the phase's wall_ms,
span_ms, kernel_ms and counts. Under emu the times are the host clock's.
CUDA.md ("The kernel profile") says more.

--perf-model prints, as a Markdown table, the decode performance model of
BENCHMARKS.md for qwen3-0.6b, qwen3-4b and qwen3-8b at batch 1, 64, 128 and
256 and context 512 and 2048, with a rank-16 adapter on all seven
projections: the bytes one decode step moves (bf16 weights, f32 LoRA, the
bf16 KV cache at that context, f32 logits written and read once), its FLOPs,
the H200 roofline time and tok/s against the datasheet (4.8 TB/s, 989
TFLOP/s) and against this workplace's measured ceilings (4.3 TB/s, 798
TFLOP/s), and what the real static decode step asks of a device, counted on
a null device (no GPU needed; it does no work): graph nodes and launches,
GEMM weight bytes, DtoH bytes, allocs/frees/syncs; "predicted" adds
--node-us per graph node to the measured roofline (1.5 µs is an assumption,
to be measured on the H200). With --group G (G > 1) the sequences are
groups of G rollouts of a --prefill-token prompt: the KV column counts
each group's whole prompt blocks (16 positions) once, as the decode step
reads them once per group (kernels.AttentionSharedPrefix), and the counted
step runs that path. It ignores the other flags and takes a minute or two
(the 8B shape's random weights are drawn on every core).`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&o.model, "model", "", "model directory or hub id (default: --shape)")
			fs.StringVar(&o.shape, "shape", "qwen3-30m", "named random-init shape (see 'grpo models')")
			fs.IntVar(&o.Prefill, "prefill", 512, "prompt tokens per sequence for the prefill figure")
			fs.IntVar(&o.Decode, "decode", 32, "decode steps for the decode figure (0 skips it)")
			fs.IntVar(&o.Batch, "batch", 1, "sequences processed together")
			fs.IntVar(&o.Group, "group", 1, "rollouts per prompt: --batch sequences are --batch/G prompts, each prefilled once and forked into G rollouts (the GRPO shape)")
			fs.IntVar(&o.Repeat, "repeat", 3, "measured runs per figure (the best is reported)")
			fs.IntVar(&o.TrainSeqs, "train-seqs", 4, "sequences in the train-step figure (0 skips it)")
			fs.IntVar(&o.TrainLen, "train-len", 256, "tokens per sequence in the train-step figure")
			fs.IntVar(&o.LoRARank, "lora-rank", 16, "LoRA rank for the train-step figure")
			fs.StringVar(&o.Recompute, "recompute", "none", "recompute setting of the train-step figure: none, swiglu, selective, layer, layer:K or selective+layer:K")
			fs.BoolVar(&o.json, "json", false, "print one JSON object instead of a table")
			fs.BoolVar(&o.NoMatmul, "no-matmul", false, "skip the matmul figures")
			fs.BoolVar(&o.Profile, "profile", false, "add a per-kernel GPU time profile of one prefill, decode step and train micro-batch (or GRPO step) after the figures (cuda, emu)")
			fs.StringVar(&o.dtype, "dtype", "auto", "weights of a --shape model: bf16, f32, or auto (bf16 on cuda and emu, f32 on cpu)")
			fs.IntVar(&o.PrefillChunk, "prefill-chunk", 16384, "most tokens per prefill forward")
			fs.StringVar(&o.PrefillLogits, "prefill-logits", "last", "logits of the prefill figure: last (each prompt's last token, as generation needs) or all (every position, as scoring and training need)")
			fs.Float64Var(&o.Temperature, "temperature", 1, "sampling temperature of the decode figure (0: greedy)")
			fs.BoolVar(&o.perfModel, "perf-model", false, "print the decode performance model (Markdown table; see above) instead of measuring")
			fs.Float64Var(&o.nodeMicros, "node-us", 1.5, "--perf-model: assumed µs per graph node added to the roofline time")
			deviceFlag(fs, &o.device)
			devicesFlag(fs, &o.devices)
			stepBenchFlags(fs, &o.Step) // --grpo-step, bench_step.go
		},
		run: func(args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q", args[0])
			}
			return runBench(o)
		},
	})
}

// benchOpts are bench's flags: the measurement's own (bench.Options) and
// what to measure on and how to print it.
type benchOpts struct {
	bench.Options
	model, shape, device string
	devices              string // --devices: each device measured in turn, a row per device and figure
	dtype                string // weights of a --shape model
	json                 bool
	perfModel            bool    // --perf-model (estimate/perf)
	nodeMicros           float64 // --node-us
}

// runBench checks the flags (usage errors before anything loads), opens
// the model, runs the bench and prints its figures: each to stderr as it
// is measured, then the table or the JSON object on stdout.
func runBench(o benchOpts) error {
	devices, err := config.DeviceNames(o.device, o.devices)
	if err != nil {
		return err
	}
	o.device = devices[0]
	if o.perfModel {
		return runPerfModel(o)
	}
	if err := o.Options.Check(); err != nil {
		return usagef("%v", err)
	}
	if o.dtype != "auto" && o.dtype != "bf16" && o.dtype != "f32" {
		return usagef("--dtype %q: want bf16, f32 or auto", o.dtype)
	}
	// Several devices are measured one after another, each alone on the
	// machine: at once they would share the host's cores and memory
	// bandwidth (cpu replicas) or its launch thread, and no figure would
	// be one device's.
	for i := 0; i < len(devices) && err == nil; i++ { // an error's device: its stderr header
		o.device = devices[i]
		err = benchOn(o, len(devices) > 1, i == 0)
	}
	return err
}

// benchOn measures o.device and prints its figures (the table's header
// first), with a DEVICE column when it is one of several.
func benchOn(o benchOpts, several, first bool) error {
	be, err := loader.OpenBackend(o.device)
	if err != nil {
		return err
	}
	if o.Profile && perf.Counter(be) == nil {
		return usagef("--profile times the kernels a device runs: use --device cuda (or emu); the %s backend launches none (for a CPU profile of a GRPO step: --grpo-step --cpuprofile FILE)", be.Name())
	}
	m, what, err := openBenchModel(o, be)
	if err != nil {
		return err
	}
	defer m.Free()
	verbose := !o.json
	wdt := bench.WeightDType(m)
	switch {
	case verbose && o.Step.Enabled:
		fmt.Fprintf(os.Stderr, "grpo bench --grpo-step: %s (%.1fM params) on %s, GOMAXPROCS=%d: %d prompts × %d rollouts × %d tokens after %d-token prompts, LoRA r%d\n",
			what, float64(m.Config.ParamCount())/1e6, o.device, runtime.GOMAXPROCS(0), o.Step.Prompts, o.Step.Rollouts, o.Step.NewTokens, o.Step.PromptLen, o.LoRARank)
	case verbose:
		fmt.Fprintf(os.Stderr, "grpo bench: %s (%.1fM params, %s weights) on %s, GOMAXPROCS=%d\n", what, float64(m.Config.ParamCount())/1e6, wdt, o.device, runtime.GOMAXPROCS(0))
	}
	cpuReport(os.Stderr, be.Name(), verbose) // BLAS core and threads, elementwise kernels
	if verbose {
		o.Progress = benchProgress()
	}
	res, err := bench.Run(m, o.Options)
	switch {
	case err != nil:
		return err
	case o.json: // scripts/bench.sh and scripts/gpu-check.sh read it
		return json.NewEncoder(stdout).Encode(res.JSON(m, what, o.Options))
	case o.Step.Enabled:
		fmt.Fprintf(stdout, "best of %d steps: generate %.3f s, train %.3f s, step %.3f s\n", o.Repeat, res.Step.Generate.Seconds(), res.Step.Train.Seconds(), res.Step.Step.Seconds())
		return printProfiles(stdout, res.Profiles)
	}
	w := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
	header, col := "FIGURE\tVALUE\tUNIT\t", ""
	if several {
		header, col = "DEVICE\t"+header, o.device+"\t"
	}
	if first {
		fmt.Fprintln(w, header)
	}
	for _, r := range res.Figures {
		fmt.Fprintf(w, "%s%s\t%.1f\t%s\t\n", col, r.Name, r.Value, r.Unit)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return printProfiles(stdout, res.Profiles)
}

// benchProgress prints, to stderr, each figure as it is measured, why
// decode ran op by op, and each measured GRPO step.
func benchProgress() bench.Progress {
	return bench.Progress{
		Figure: func(f bench.Figure) { fmt.Fprintf(os.Stderr, "  %-28s %10.1f %s\n", f.Name, f.Value, f.Unit) },
		OpByOp: func(err error) { fmt.Fprintf(os.Stderr, "  decode ran op by op: %v\n", err) },
		Step: func(n int, r bench.StepResult) {
			fmt.Fprintf(os.Stderr, "  step %d: generate %.3f s, train %.3f s, loss %.4g, grad norm %.4g\n", n, r.Generate.Seconds(), r.Train.Seconds(), r.Loss, r.GradNorm)
		},
	}
}

// openBenchModel opens --model, or makes --shape with random weights; it
// returns the model and what to call it.
func openBenchModel(o benchOpts, be kernels.Backend) (*model.Model, string, error) {
	if o.model != "" {
		l, err := openModel(loader.Spec{Model: o.model, Backend: be, TokenizerOptional: true})
		if err != nil {
			return nil, "", err
		}
		return l.Base, l.Dir, nil
	}
	cfg, ok := model.Shape(o.shape)
	if !ok {
		return nil, "", usagef("--shape %q is unknown; known shapes: %v", o.shape, model.ShapeNames())
	}
	m, err := bench.RandomModel(cfg, be, o.dtype)
	return m, o.shape, err
}
