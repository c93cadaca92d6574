package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
)

// benchResult is one measured figure.
type benchResult struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

func init() {
	var o benchOpts
	register(&command{
		name:    "bench",
		summary: "measure forward, decode and matmul throughput on this machine",
		usage:   "[--model DIR | --shape NAME] [--prefill N] [--decode N] [--batch B]",
		help: `Measures, on the chosen backend:
  prefill   tokens/s of one forward pass over --prefill tokens of --batch sequences,
            with logits at every position (as scoring and training need)
  decode    tokens/s of --decode single-token steps for --batch sequences at once
            (KV cache, each sequence at its own position)
  train     tokens/s of one LoRA train step (forward, log-probs, backward to the
            LoRA parameters) over --train-seqs sequences of --train-len tokens,
            rank --lora-rank on all seven projections
  matmul    GFLOP/s of 512x512x512 and 512x2048x512 products
Each figure is the best of --repeat runs after one warm-up. BENCHMARKS.md puts
them next to PyTorch on the same machine (scripts/bench.sh runs both).

Examples:
  grpo bench --shape qwen3-30m
  grpo bench --model testdata/models/qwen3-tiny --prefill 128 --decode 32
  grpo bench --shape qwen3-0.6b --device cuda --batch 128 --json`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&o.model, "model", "", "model directory or hub id (default: --shape)")
			fs.StringVar(&o.shape, "shape", "qwen3-30m", "named random-init shape (see 'grpo models')")
			fs.IntVar(&o.prefill, "prefill", 512, "prompt tokens per sequence for the prefill figure")
			fs.IntVar(&o.decode, "decode", 32, "decode steps for the decode figure (0 skips it)")
			fs.IntVar(&o.batch, "batch", 1, "sequences processed together")
			fs.IntVar(&o.repeat, "repeat", 3, "measured runs per figure (the best is reported)")
			fs.IntVar(&o.trainSeqs, "train-seqs", 4, "sequences in the train-step figure (0 skips it)")
			fs.IntVar(&o.trainLen, "train-len", 256, "tokens per sequence in the train-step figure")
			fs.IntVar(&o.loraRank, "lora-rank", 16, "LoRA rank for the train-step figure")
			fs.BoolVar(&o.json, "json", false, "print one JSON object instead of a table")
			fs.BoolVar(&o.noMatmul, "no-matmul", false, "skip the matmul figures")
			deviceFlag(fs, &o.device)
		},
		run: func(args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q", args[0])
			}
			return runBench(o)
		},
	})
}

type benchOpts struct {
	model, shape, device   string
	prefill, decode, batch int
	repeat                 int
	trainSeqs, trainLen    int
	loraRank               int
	json, noMatmul         bool
}

func runBench(o benchOpts) error {
	if o.prefill < 1 || o.batch < 1 || o.repeat < 1 || o.decode < 0 {
		return usagef("--prefill, --batch and --repeat must be >= 1 and --decode >= 0")
	}
	be, err := openBackend(o.device)
	if err != nil {
		return err
	}
	var m *model.Model
	what := o.shape
	if o.model != "" {
		dir, err := resolveModelDir(o.model)
		if err != nil {
			return err
		}
		if m, err = model.Load(dir, be); err != nil {
			return err
		}
		what = dir
	} else {
		cfg, ok := model.Shape(o.shape)
		if !ok {
			return usagef("--shape %q is unknown; known shapes: %v", o.shape, model.ShapeNames())
		}
		m = model.NewRandom(cfg, be, 1)
	}
	defer m.Free()
	var results []benchResult
	add := func(name string, v float64, unit string) {
		results = append(results, benchResult{name, v, unit})
		if !o.json {
			fmt.Fprintf(os.Stderr, "  %-28s %10.1f %s\n", name, v, unit)
		}
	}
	if !o.json {
		fmt.Fprintf(os.Stderr, "grpo bench: %s (%.1fM params) on %s, GOMAXPROCS=%d\n", what, float64(m.Config.ParamCount())/1e6, be.Name(), runtime.GOMAXPROCS(0))
	}
	cpuReport(os.Stderr, be.Name(), !o.json) // BLAS core and threads, elementwise kernels
	prefill, decode, err := benchModel(m, o)
	if err != nil {
		return err
	}
	add(fmt.Sprintf("prefill %dx%d", o.batch, o.prefill), prefill, "tok/s")
	if o.decode > 0 {
		add(fmt.Sprintf("decode batch %d", o.batch), decode, "tok/s")
	}
	var train float64
	if o.trainSeqs > 0 {
		if train, err = benchTrain(m, o); err != nil {
			return err
		}
		add(fmt.Sprintf("lora train %dx%d r%d", o.trainSeqs, o.trainLen, o.loraRank), train, "tok/s")
	}
	if be.Describe().GPU {
		// Random-shape models hold f32 weights; a bf16 checkpoint half that.
		weightBytes := 4 * float64(m.Config.ParamCount())
		if m.Config.TorchDType == "bfloat16" && o.model != "" {
			weightBytes /= 2
		}
		for _, r := range rooflineFigures(m.Config, weightBytes, o, prefill, decode, train) {
			add(r.Name, r.Value, r.Unit)
		}
	}
	if !o.noMatmul {
		for _, s := range [][3]int{{512, 512, 512}, {512, 2048, 512}} {
			add(fmt.Sprintf("matmul %dx%dx%d", s[0], s[1], s[2]), benchMatMul(be, s[0], s[1], s[2], o.repeat), "GFLOP/s")
		}
	}
	if o.json {
		return json.NewEncoder(stdout).Encode(map[string]any{
			"model": what, "backend": be.Name(), "params": m.Config.ParamCount(),
			"threads": runtime.GOMAXPROCS(0), "results": results})
	}
	w := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "FIGURE\tVALUE\tUNIT\t")
	for _, r := range results {
		fmt.Fprintf(w, "%s\t%.1f\t%s\t\n", r.Name, r.Value, r.Unit)
	}
	return w.Flush()
}

// benchModel returns prefill and decode throughput in tokens/s.
func benchModel(m *model.Model, o benchOpts) (prefill, decode float64, err error) {
	rng := rand.New(rand.NewPCG(7, 7))
	maxLen := o.prefill + o.decode
	cache := m.NewKVCache(o.batch, maxLen)
	defer cache.Free()
	var b model.Batch
	for s := range o.batch {
		ids := make([]int32, o.prefill)
		for i := range ids {
			ids[i] = int32(rng.IntN(m.Config.VocabSize))
		}
		b.Add(s, 0, ids...)
	}
	best := func(f func() error) (time.Duration, error) {
		var bestD time.Duration
		for i := range o.repeat + 1 {
			t0 := time.Now()
			if err := f(); err != nil {
				return 0, err
			}
			if d := time.Since(t0); i > 0 && (bestD == 0 || d < bestD) {
				bestD = d
			}
		}
		return bestD, nil
	}
	d, err := best(func() error {
		logits, err := m.Forward(cache, &b, nil)
		if err == nil {
			m.Backend.Free(logits)
		}
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	prefill = float64(o.batch*o.prefill) / d.Seconds()
	if o.decode == 0 {
		return prefill, 0, nil
	}
	d, err = best(func() error {
		for step := range o.decode {
			var db model.Batch
			for s := range o.batch {
				db.Add(s, o.prefill+step, int32(rng.IntN(m.Config.VocabSize)))
			}
			logits, err := m.Forward(cache, &db, nil)
			if err != nil {
				return err
			}
			host := make([]float32, logits.Len())
			m.Backend.Download(host, logits) // the sampler reads logits on the host
			m.Backend.Free(logits)
		}
		return m.Backend.Sync()
	})
	if err != nil {
		return 0, 0, err
	}
	return prefill, float64(o.batch*o.decode) / d.Seconds(), nil
}

// benchMatMul returns the best GFLOP/s of C = A·Bᵀ (the layout of a linear
// layer) over repeat runs.
func benchMatMul(be kernels.Backend, m, n, k, repeat int) float64 {
	a, b, c := be.Alloc(kernels.F32, m*k), be.Alloc(kernels.F32, n*k), be.Alloc(kernels.F32, m*n)
	defer be.Free(a)
	defer be.Free(b)
	defer be.Free(c)
	rng := rand.New(rand.NewPCG(1, 2))
	fill := func(buf kernels.Buffer) {
		v := make([]float32, buf.Len())
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		be.Upload(buf, v)
	}
	fill(a)
	fill(b)
	var bestD time.Duration
	for i := range repeat + 1 {
		t0 := time.Now()
		be.MatMul(c, a, b, m, n, k, false, true, 1, 0)
		be.Sync()
		if d := time.Since(t0); i > 0 && (bestD == 0 || d < bestD) {
			bestD = d
		}
	}
	return 2 * float64(m) * float64(n) * float64(k) / bestD.Seconds() / 1e9
}

// benchTrain returns the tokens/s of one LoRA train step: the training
// forward, log-probs of every next token, and the backward pass into the
// adapter's gradients (what PolicyGradient does per micro-batch).
func benchTrain(base *model.Model, o benchOpts) (float64, error) {
	cfg := lora.DefaultConfig()
	cfg.Rank, cfg.Alpha = o.loraRank, float64(2*o.loraRank)
	ad, err := lora.New(base, cfg, 1)
	if err != nil {
		return 0, err
	}
	defer ad.Free()
	m := base.WithAdapter(ad)
	rng := rand.New(rand.NewPCG(9, 9))
	var b model.Batch
	var targets []int32
	for s := range o.trainSeqs {
		for i := range o.trainLen {
			b.Add(s, i, int32(rng.IntN(m.Config.VocabSize)))
			targets = append(targets, int32(rng.IntN(m.Config.VocabSize)))
		}
	}
	be := m.Backend
	dlogp := be.Alloc(kernels.F32, b.Len())
	defer be.Free(dlogp)
	ones := make([]float32, b.Len())
	for i := range ones {
		ones[i] = 1
	}
	be.Upload(dlogp, ones)
	var best time.Duration
	for i := range o.repeat + 1 {
		t0 := time.Now()
		tr, err := m.ForwardTrain(&b, targets)
		if err != nil {
			return 0, err
		}
		err = tr.Backward(dlogp)
		tr.Free()
		if err != nil {
			return 0, err
		}
		if d := time.Since(t0); i > 0 && (best == 0 || d < best) {
			best = d
		}
	}
	return float64(b.Len()) / best.Seconds(), nil
}
