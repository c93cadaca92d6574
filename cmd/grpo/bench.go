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

	"github.com/grpo-dev/grpo/estimate/perf"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/loader"
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
			fs.IntVar(&o.prefill, "prefill", 512, "prompt tokens per sequence for the prefill figure")
			fs.IntVar(&o.decode, "decode", 32, "decode steps for the decode figure (0 skips it)")
			fs.IntVar(&o.batch, "batch", 1, "sequences processed together")
			fs.IntVar(&o.group, "group", 1, "rollouts per prompt: --batch sequences are --batch/G prompts, each prefilled once and forked into G rollouts (the GRPO shape)")
			fs.IntVar(&o.repeat, "repeat", 3, "measured runs per figure (the best is reported)")
			fs.IntVar(&o.trainSeqs, "train-seqs", 4, "sequences in the train-step figure (0 skips it)")
			fs.IntVar(&o.trainLen, "train-len", 256, "tokens per sequence in the train-step figure")
			fs.IntVar(&o.loraRank, "lora-rank", 16, "LoRA rank for the train-step figure")
			fs.StringVar(&o.recompute, "recompute", "none", "recompute setting of the train-step figure: none, swiglu, selective, layer, layer:K or selective+layer:K")
			fs.BoolVar(&o.json, "json", false, "print one JSON object instead of a table")
			fs.BoolVar(&o.noMatmul, "no-matmul", false, "skip the matmul figures")
			fs.StringVar(&o.dtype, "dtype", "auto", "weights of a --shape model: bf16, f32, or auto (bf16 on cuda and emu, f32 on cpu)")
			fs.IntVar(&o.prefillChunk, "prefill-chunk", 16384, "most tokens per prefill forward")
			fs.StringVar(&o.prefillLogits, "prefill-logits", "last", "logits of the prefill figure: last (each prompt's last token, as generation needs) or all (every position, as scoring and training need)")
			fs.Float64Var(&o.temperature, "temperature", 1, "sampling temperature of the decode figure (0: greedy)")
			fs.BoolVar(&o.perfModel, "perf-model", false, "print the decode performance model (Markdown table; see above) instead of measuring")
			fs.Float64Var(&o.nodeMicros, "node-us", 1.5, "--perf-model: assumed µs per graph node added to the roofline time")
			deviceFlag(fs, &o.device)
			stepBenchFlags(fs, &o.step) // --grpo-step, bench_step.go
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
	dtype                  string
	prefillChunk           int
	temperature            float64
	prefillLogits          string
	prefill, decode, batch int
	group                  int // rollouts per prompt (--group)
	repeat                 int
	trainSeqs, trainLen    int
	loraRank               int
	recompute              string // the train step's recompute setting
	json, noMatmul         bool
	step                   stepBenchOpts
	perfModel              bool    // --perf-model (estimate/perf)
	nodeMicros             float64 // --node-us
}

func runBench(o benchOpts) error {
	if o.perfModel {
		return runPerfModel(o)
	}
	if o.prefill < 1 || o.batch < 1 || o.repeat < 1 || o.decode < 0 || o.prefillChunk < 1 {
		return usagef("--prefill, --batch, --repeat and --prefill-chunk must be >= 1 and --decode >= 0")
	}
	if o.group == 0 {
		o.group = 1
	}
	if o.group < 1 || o.batch%o.group != 0 {
		return usagef("--group %d: want a divisor of --batch %d (batch = prompts × rollouts per prompt)", o.group, o.batch)
	}
	if o.prefillLogits == "" {
		o.prefillLogits = "last"
	}
	if o.prefillLogits != "last" && o.prefillLogits != "all" {
		return usagef("--prefill-logits %q: want last or all", o.prefillLogits)
	}
	if o.dtype != "auto" && o.dtype != "bf16" && o.dtype != "f32" {
		return usagef("--dtype %q: want bf16, f32 or auto", o.dtype)
	}
	if o.recompute == "" {
		o.recompute = "none"
	}
	if _, _, err := model.ParseRecomputeSetting(o.recompute); err != nil {
		return usagef("--recompute: %v", err)
	}
	be, err := loader.OpenBackend(o.device)
	if err != nil {
		return err
	}
	var m *model.Model
	what := o.shape
	if o.model != "" {
		l, err := openModel(loader.Spec{Model: o.model, Backend: be, TokenizerOptional: true})
		if err != nil {
			return err
		}
		m, what = l.Base, l.Dir
	} else {
		cfg, ok := model.Shape(o.shape)
		if !ok {
			return usagef("--shape %q is unknown; known shapes: %v", o.shape, model.ShapeNames())
		}
		// Random weights drawn on every core, straight into the dtype the
		// GEMMs will read: an 8B shape starts in seconds.
		dt := kernels.F32
		if o.dtype == "bf16" || (o.dtype == "auto" && be.Name() != "cpu") {
			dt = kernels.BF16
		}
		m = model.NewRandomParallel(cfg, be, 1, dt)
		if err := be.Sync(); err != nil {
			m.Free()
			return fmt.Errorf("bench: random weights: %w", err)
		}
	}
	defer m.Free()
	if o.step.enabled {
		return runStepBench(m, be, what, o)
	}
	wdt := weightDType(m)
	var results []benchResult
	add := func(name string, v float64, unit string) {
		results = append(results, benchResult{name, v, unit})
		if !o.json {
			fmt.Fprintf(os.Stderr, "  %-28s %10.1f %s\n", name, v, unit)
		}
	}
	if !o.json {
		fmt.Fprintf(os.Stderr, "grpo bench: %s (%.1fM params, %s weights) on %s, GOMAXPROCS=%d\n", what, float64(m.Config.ParamCount())/1e6, wdt, be.Name(), runtime.GOMAXPROCS(0))
	}
	cpuReport(os.Stderr, be.Name(), !o.json) // BLAS core and threads, elementwise kernels
	var counts benchCounts
	perf.TagWeights(m, nil)
	prefill, decode, err := benchModel(m, o, &counts)
	if err != nil {
		return err
	}
	add(fmt.Sprintf("prefill %dx%d", o.batch/o.group, o.prefill), prefill, "tok/s")
	if o.decode > 0 {
		add(fmt.Sprintf("decode batch %d", o.batch), decode, "tok/s")
	}
	var train float64
	if o.trainSeqs > 0 {
		if train, err = benchTrain(m, o, &counts); err != nil {
			return err
		}
		name := fmt.Sprintf("lora train %dx%d r%d", o.trainSeqs, o.trainLen, o.loraRank)
		if o.recompute != "none" {
			name += " recompute " + o.recompute
		}
		add(name, train, "tok/s")
	}
	if be.Describe().GPU {
		for _, r := range rooflineFigures(m.Config, wdt.Size(), perf.KVDType(be), o, prefill, decode, train) {
			add(r.Name, r.Value, r.Unit)
		}
		var prefillFLOPs int64
		if counts.Prefill != nil {
			prefillFLOPs = counts.Prefill.FLOPs
		}
		for _, r := range hfuFigures(m.Config, o, prefillFLOPs, counts.TrainStepFLOPs, prefill, train) {
			add(r.Name, r.Value, r.Unit)
		}
	}
	if !o.noMatmul {
		for _, s := range [][3]int{{512, 512, 512}, {512, 2048, 512}} {
			add(fmt.Sprintf("matmul %dx%dx%d", s[0], s[1], s[2]), benchMatMul(be, s[0], s[1], s[2], o.repeat), "GFLOP/s")
		}
	}
	if o.json {
		out := map[string]any{
			"model": what, "backend": be.Name(), "params": m.Config.ParamCount(), "weights": wdt.String(),
			"threads": runtime.GOMAXPROCS(0), "results": results}
		if perf.Counter(be) != nil {
			out["counts"] = counts
		}
		return json.NewEncoder(stdout).Encode(out)
	}
	w := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "FIGURE\tVALUE\tUNIT\t")
	for _, r := range results {
		fmt.Fprintf(w, "%s\t%.1f\t%s\t\n", r.Name, r.Value, r.Unit)
	}
	return w.Flush()
}

// benchModel returns prefill and decode throughput in tokens/s, and
// fills counts on a backend that counts.
func benchModel(m *model.Model, o benchOpts, counts *benchCounts) (prefill, decode float64, err error) {
	rng := rand.New(rand.NewPCG(7, 7))
	maxLen := o.prefill + o.decode
	cache, err := perf.DecodeCache(m, o.batch, maxLen)
	if err != nil {
		return 0, 0, fmt.Errorf("bench: %w", err)
	}
	defer cache.Free()
	// With --group G only each group's first slot has a prompt to
	// prefill; the others fork it after the prefill figure.
	prompts := make([][]int32, o.batch)
	for s := 0; s < o.batch; s += o.group {
		prompts[s] = make([]int32, o.prefill)
		for i := range prompts[s] {
			prompts[s][i] = int32(rng.IntN(m.Config.VocabSize))
		}
	}
	chunkTokens := o.prefillChunk
	if o.prefillLogits == "all" {
		// Every position's logits: a chunk's logits must stay within the
		// backends' int32 index space (16384 × 151936 would not).
		chunkTokens = min(chunkTokens, maxLogits/m.Config.VocabSize)
	}
	chunks := prefillChunks(prompts, chunkTokens)
	if o.prefillLogits == "all" {
		for i := range chunks {
			chunks[i].logitRows = nil // every row
		}
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
	be := m.Backend
	d, err := best(func() (err error) {
		counts.Prefill, err = perf.Measure(be, func() error {
			for _, c := range chunks {
				logits, err := m.Forward(cache, &c.batch, c.logitRows)
				if err != nil {
					return err
				}
				be.Free(logits)
			}
			return be.Sync()
		})
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	prefill = float64(o.batch/o.group*o.prefill) / d.Seconds()
	if o.decode == 0 {
		return prefill, 0, nil
	}
	for s := range o.batch {
		if lead := s - s%o.group; lead != s {
			if err := cache.Fork(s, lead, o.prefill); err != nil {
				return 0, 0, fmt.Errorf("bench: %w", err)
			}
		}
	}
	// Decode: the static decode step the sampler takes (model.Decoder):
	// each step's tokens are the previous step's draws, made on the device
	// from per-sequence streams and fed back there; 8 bytes per sequence
	// come back to the host. With graphs (cuda, emu) a step is one graph
	// launch once the first two steps have warmed it up and captured it.
	dec := m.NewDecoder(o.batch)
	defer dec.Free()
	rows := make([]model.DecodeRow, o.batch)
	tok, lp := make([]int32, o.batch), make([]float32, o.batch)
	step := func(i int) error {
		if err := dec.Step(cache, tok, lp); err != nil {
			return fmt.Errorf("bench: decode step %d: %w", i, err)
		}
		for s, t := range tok {
			if t < 0 {
				return fmt.Errorf("bench: decode step %d: sequence %d drew no token (NaN or +Inf logits)", i, s)
			}
		}
		return nil
	}
	d, err = best(func() error {
		for s := range rows {
			rows[s] = model.DecodeRow{Slot: int32(s), Pos: int32(o.prefill), Token: prompts[s-s%o.group][o.prefill-1],
				Params: kernels.SampleParams{Temperature: o.temperature, TopP: 1}, PCGHi: rng.Uint64(), PCGLo: rng.Uint64()}
		}
		if err := dec.Load(cache, rows, -1); err != nil {
			return err
		}
		for i := range o.decode {
			c, err := perf.Measure(be, func() error { return step(i) })
			if err != nil {
				return err
			}
			counts.DecodeStep = c // the last step's
		}
		return be.Sync()
	})
	if err != nil {
		return 0, 0, err
	}
	if counts.DecodeStep != nil {
		counts.DecodeKVBytes = perf.DecodeKVBytes(m.Config, o.batch, o.prefill+o.decode-1, perf.KVDType(be))
		counts.DecodeKVDType = cache.K[0].DType().String()
	}
	if err := dec.GraphErr(); err != nil {
		counts.DecodeGraphErr = err.Error()
		if !o.json {
			fmt.Fprintf(os.Stderr, "  decode ran op by op: %v\n", err)
		}
	}
	return prefill, float64(o.batch*o.decode) / d.Seconds(), nil
}

// prefillChunk is one prefill forward: whole or partial prompts, and the
// rows of the batch that are a prompt's last token (the only logits
// generation needs).
type prefillChunk struct {
	batch     model.Batch
	logitRows []int32
}

// prefillChunks cuts the prompts into forwards of at most maxTokens
// tokens, as a serving engine's chunked prefill does: the activations and
// every op's index space stay bounded whatever --batch × --prefill is. A
// prompt may span chunks (it continues at its position in the KV cache);
// an empty one (a forked rollout's slot) has nothing to prefill.
func prefillChunks(prompts [][]int32, maxTokens int) []prefillChunk {
	var out []prefillChunk
	var cur prefillChunk
	for s, p := range prompts {
		for start := 0; start < len(p); {
			n := min(len(p)-start, maxTokens-cur.batch.Len())
			cur.batch.Add(s, start, p[start:start+n]...)
			start += n
			if start == len(p) {
				cur.logitRows = append(cur.logitRows, int32(cur.batch.Len()-1))
			}
			if cur.batch.Len() == maxTokens {
				out = append(out, cur)
				cur = prefillChunk{}
			}
		}
	}
	if cur.batch.Len() > 0 {
		out = append(out, cur)
	}
	return out
}

// weightDType is the dtype of the projection weights (what MatMul reads).
func weightDType(m *model.Model) kernels.DType {
	if len(m.W.Layers) > 0 && m.W.Layers[0].Q != nil {
		return m.W.Layers[0].Q.DType()
	}
	return m.W.Embed.DType()
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
func benchTrain(base *model.Model, o benchOpts, counts *benchCounts) (float64, error) {
	cfg := lora.DefaultConfig()
	cfg.Rank, cfg.Alpha = o.loraRank, float64(2*o.loraRank)
	ad, err := lora.New(base, cfg, 1)
	if err != nil {
		return 0, err
	}
	defer ad.Free()
	m := base.WithAdapter(ad)
	perf.TagWeights(m, ad)
	m.Recompute, m.CheckpointLayers, _ = model.ParseRecomputeSetting(o.recompute) // checked by runBench
	rng := rand.New(rand.NewPCG(9, 9))
	// Micro-batches of whole sequences whose logits (tokens × vocab) stay
	// within the backends' int32 index space, as PolicyGradient's do.
	perMB := min(o.trainSeqs, maxLogits/(o.trainLen*m.Config.VocabSize))
	if perMB < 1 {
		return 0, fmt.Errorf("bench: one train sequence of %d tokens has %d logits, more than %d; lower --train-len", o.trainLen, o.trainLen*m.Config.VocabSize, maxLogits)
	}
	type micro struct {
		b       model.Batch
		targets []int32
	}
	var mbs []micro
	for s := 0; s < o.trainSeqs; s += perMB {
		var mb micro
		for q := range min(perMB, o.trainSeqs-s) {
			for i := range o.trainLen {
				mb.b.Add(q, i, int32(rng.IntN(m.Config.VocabSize)))
				mb.targets = append(mb.targets, int32(rng.IntN(m.Config.VocabSize)))
			}
		}
		mbs = append(mbs, mb)
	}
	be := m.Backend
	dlogp := be.Alloc(kernels.F32, mbs[0].b.Len())
	defer be.Free(dlogp)
	ones := make([]float32, mbs[0].b.Len())
	for i := range ones {
		ones[i] = 1
	}
	be.Upload(dlogp, ones)
	runMicro := func(mb *micro) error {
		tr, err := m.ForwardTrain(&mb.b, nil, mb.targets)
		if err != nil {
			return err
		}
		g := dlogp
		if mb.b.Len() < dlogp.Len() {
			g = dlogp.Slice(0, mb.b.Len())
		}
		err = tr.Backward(g)
		tr.Free()
		return err
	}
	var best time.Duration
	for i := range o.repeat + 1 {
		t0 := time.Now()
		var stepFLOPs int64
		for i := range mbs {
			c, err := perf.Measure(be, func() error { return runMicro(&mbs[i]) })
			if err != nil {
				return 0, err
			}
			counts.TrainMicroBatch = c // the last micro-batch's
			if c != nil {
				stepFLOPs += c.FLOPs
			}
		}
		counts.TrainStepFLOPs = stepFLOPs
		if err := be.Sync(); err != nil {
			return 0, err
		}
		if d := time.Since(t0); i > 0 && (best == 0 || d < best) {
			best = d
		}
	}
	return float64(o.trainSeqs*o.trainLen) / best.Seconds(), nil
}

// maxLogits is the most elements one logits buffer may have: the cuda
// backend's ops index with int32.
const maxLogits = 1<<31 - 1
