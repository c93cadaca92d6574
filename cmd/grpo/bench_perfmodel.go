package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
)

// The decode performance model (grpo bench --perf-model, BENCHMARKS.md
// "Decode performance model"): for each shape, batch and context, the
// bytes and FLOPs of one static decode step of the sampler, the H200
// roofline time, and what the real decode step asks of a device, counted
// on the null device.

// Ceilings this workplace measured on its H200 (gpu-check): a
// device-to-device copy at 4.3 TB/s and bf16 GEMMs on random data at
// 769–798 TFLOP/s. The best of them is what the hardware has shown it
// can do, so it bounds a decode step as the datasheet does.
const (
	h200MeasuredHBMBytes  = 4.3e12
	h200MeasuredBF16FLOPs = 798e12
)

var (
	perfShapes   = []string{"qwen3-0.6b", "qwen3-4b", "qwen3-8b"}
	perfBatches  = []int{1, 64, 128, 256}
	perfContexts = []int{512, 2048}
)

// perfLoRARank is the adapter the trainer samples with (lora.DefaultConfig:
// rank 16 on all seven projections).
const perfLoRARank = 16

// decodeStepBytes is what one decode step of batch sequences at context
// ctx must move through HBM at least, by kind. Weights are bf16: every
// matrix and norm a step reads (readParams) and the batch's embedding
// rows, not a separate embedding table (only its rows are gathered; a
// tied one is read whole as the LM head). LoRA is f32 A and B. KV is the
// sampler's cache (elemBytes each) read at ctx positions. Logits are f32,
// written by the LM head and read once by sampling. Activations (a
// layer's are at most batch × 2·intermediate f32, 25 MB at 8B and batch
// 256) are left out: they live in L2 between kernels as often as not, and
// leaving them out makes the roofline time shorter, the bar harder.
type decodeStepBytes struct {
	Weights, LoRA, KV, Logits float64
}

func (b decodeStepBytes) Total() float64 { return b.Weights + b.LoRA + b.KV + b.Logits }

func decodeBytes(c *model.Config, batch int, ctx float64, rank, kvElem int) decodeStepBytes {
	params := readParams(c, batch) + float64(batch*c.HiddenSize)
	if !c.TieWordEmbeddings {
		params -= float64(c.VocabSize * c.HiddenSize)
	}
	return decodeStepBytes{
		Weights: 2 * params,
		LoRA:    4 * loraParams(c, rank),
		KV:      float64(batch) * kvBytes(c, ctx, kvElem),
		Logits:  2 * 4 * float64(batch) * float64(c.VocabSize),
	}
}

// loraParams is the adapter's A and B of rank r on all seven projections
// of every dense layer: r·(in + out) each.
func loraParams(c *model.Config, r int) float64 {
	h, i := float64(c.HiddenSize), float64(c.IntermediateSize)
	q, kv := float64(c.NumHeads*c.HeadDim), float64(c.NumKVHeads*c.HeadDim)
	per := (h + q) + 2*(h+kv) + (q + h) + 2*(h+i) + (i + h)
	return float64(r) * per * float64(c.NumLayers)
}

// decodeFLOPs is one step's work: every token's projections, LM head and
// attention over ctx positions, and its LoRA products (2 FLOPs per A and
// B weight).
func decodeFLOPs(c *model.Config, batch, ctx, rank int) float64 {
	return float64(batch) * (linearFLOPs(c) + attentionFLOPs(c, float64(ctx)) + 2*loraParams(c, rank))
}

// rooflineSeconds is the least time a step can take: its bytes at the
// bandwidth or its FLOPs at the peak, whichever is longer.
func rooflineSeconds(bytes, flops, bandwidth, peak float64) float64 {
	return max(bytes/bandwidth, flops/peak)
}

// perfRow is one line of the table.
type perfRow struct {
	Shape           string
	Batch, Ctx      int
	Bytes           decodeStepBytes
	FLOPs           float64
	Sheet, Measured float64 // roofline seconds: datasheet, measured ceilings
	Counts          cuda.Counts
	Predicted       float64 // seconds: Measured + a node cost per graph node
}

// countDecodeStep drives the sampler's static decode step (model.Decoder
// over a paged cache sized as benchCache) on m at batch sequences of
// context ctx: slot 0 prefilled with ctx−1 tokens and forked into the
// others (a GRPO group), then steps — the first op by op, the second
// captured, the rest replayed — and returns what the fourth step asked of
// the device. m must be on a CUDA backend (its counter). With shared the
// step reads the group's prompt once (kernels.AttentionSharedPrefix),
// else every row reads its own context; its launches are the same for
// any grouping (the grid covers every row).
func countDecodeStep(m *model.Model, batch, ctx int, shared bool) (cuda.Counts, error) {
	be := m.Backend
	const steps = 4
	cache, err := benchCache(m, batch, ctx+steps)
	if err != nil {
		return cuda.Counts{}, err
	}
	defer cache.Free()
	rng := rand.New(rand.NewPCG(uint64(batch), uint64(ctx)))
	var pre model.Batch
	for i := range ctx - 1 {
		pre.Add(0, i, int32(rng.IntN(m.Config.VocabSize)))
	}
	logits, err := m.Forward(cache, &pre, []int32{int32(ctx - 2)})
	if err != nil {
		return cuda.Counts{}, err
	}
	be.Free(logits)
	rows := make([]model.DecodeRow, batch)
	for s := range rows {
		if s > 0 {
			if err := cache.Fork(s, 0, ctx-1); err != nil {
				return cuda.Counts{}, err
			}
		}
		rows[s] = model.DecodeRow{Slot: int32(s), Pos: int32(ctx - 1), Token: int32(rng.IntN(m.Config.VocabSize)),
			Params: kernels.SampleParams{Temperature: 1, TopP: 1}, PCGHi: rng.Uint64(), PCGLo: rng.Uint64()}
	}
	dec := m.NewDecoder(batch)
	defer dec.Free()
	dec.SetSharedPrefixAttention(shared)
	if err := dec.Load(cache, rows, -1); err != nil {
		return cuda.Counts{}, err
	}
	tok, lp := make([]int32, batch), make([]float32, batch)
	var c *cuda.Counts
	for i := range steps {
		if c, err = measure(be, func() error { return dec.Step(cache, tok, lp) }); err != nil {
			return cuda.Counts{}, fmt.Errorf("decode step %d: %w", i, err)
		}
	}
	if err := dec.GraphErr(); err != nil {
		return cuda.Counts{}, err
	}
	if c == nil {
		return cuda.Counts{}, fmt.Errorf("perf model: backend %s counts nothing", be.Name())
	}
	return *c, nil
}

// perfModelRows computes the table for shapes × batches × contexts:
// each shape built once on a null device (bf16 weights, a rank-16
// adapter on all seven projections), its base weights tagged so the
// counter sees the GEMMs read them. nodeCost is the assumed seconds
// per graph node added to the measured roofline. With sh.Group > 1 the
// KV bytes are sharedKVBytes' and the counted step reads the prompt once
// per group.
func perfModelRows(shapes []string, batches, contexts []int, sh perfSharing, nodeCost float64, progress io.Writer) ([]perfRow, error) {
	var rows []perfRow
	for _, name := range shapes {
		cfg, ok := model.Shape(name)
		if !ok {
			return nil, usagef("--perf-model: shape %q is unknown; known shapes: %v", name, model.ShapeNames())
		}
		if cfg.SparseLayers() > 0 {
			return nil, usagef("--perf-model: shape %q is a mixture of experts; the model covers dense shapes", name)
		}
		if progress != nil {
			fmt.Fprintf(progress, "perf model: %s on the null device\n", name)
		}
		be := cuda.New(cuda.NewNullDevice())
		base := model.NewRandomParallel(cfg, be, 1, kernels.BF16)
		tagWeights(base, nil)
		lc := lora.DefaultConfig()
		lc.Rank, lc.Alpha = perfLoRARank, 2*perfLoRARank
		ad, err := lora.New(base, lc, 1)
		if err != nil {
			return nil, err
		}
		m := base.WithAdapter(ad)
		for _, b := range batches {
			for _, ctx := range contexts {
				counts, err := countDecodeStep(m, b, ctx, sh.Group > 1)
				if err != nil {
					return nil, fmt.Errorf("perf model: %s batch %d context %d: %w", name, b, ctx, err)
				}
				r := perfRow{Shape: name, Batch: b, Ctx: ctx, Counts: counts,
					Bytes: decodeBytesShared(cfg, b, sh.Group, float64(ctx), sh.Prompt, perfLoRARank, kvElemBytes(be)),
					FLOPs: decodeFLOPs(cfg, b, ctx, perfLoRARank)}
				r.Sheet = rooflineSeconds(r.Bytes.Total(), r.FLOPs, h200HBMBytes, h200BF16FLOPs)
				r.Measured = rooflineSeconds(r.Bytes.Total(), r.FLOPs, h200MeasuredHBMBytes, h200MeasuredBF16FLOPs)
				r.Predicted = r.Measured + float64(counts.GraphKernels+counts.Launches+counts.GEMMs)*nodeCost
				rows = append(rows, r)
			}
		}
		ad.Free()
		base.Free()
		if err := be.Close(); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// perfSharing is the GRPO group the perf model assumes: Group rollouts
// forked from a prompt of Prompt positions (grpo bench --group,
// --prefill); Group 1 shares nothing.
type perfSharing struct{ Group, Prompt int }

// kvHeader names the KV column.
func (sh perfSharing) kvHeader() string {
	if sh.Group < 2 {
		return "KV GB"
	}
	return fmt.Sprintf("KV GB (G=%d, prompt %d)", sh.Group, sh.Prompt)
}

// writePerfTable prints the rows as a Markdown table.
func writePerfTable(w io.Writer, rows []perfRow, sh perfSharing, nodeCost float64) {
	fmt.Fprintf(w, "| model | batch | ctx | weights GB | LoRA MB | %s | logits MB | bytes/step GB | GFLOP/step | roofline µs (datasheet) | tok/s (datasheet) | roofline µs (measured) | tok/s (measured) | graph nodes | graph launches | GEMM weight GB (counted) | DtoH B | allocs/frees/syncs | predicted µs (+%.1f µs/node) | predicted tok/s |\n", sh.kvHeader(), nodeCost*1e6)
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, r := range rows {
		c := r.Counts
		fmt.Fprintf(w, "| %s | %d | %d | %.3f | %.1f | %.3f | %.1f | %.3f | %.1f | %.0f | %.0f | %.0f | %.0f | %d | %d | %.3f | %d | %d/%d/%d | %.0f | %.0f |\n",
			r.Shape, r.Batch, r.Ctx, r.Bytes.Weights/1e9, r.Bytes.LoRA/1e6, r.Bytes.KV/1e9, r.Bytes.Logits/1e6, r.Bytes.Total()/1e9,
			r.FLOPs/1e9, r.Sheet*1e6, float64(r.Batch)/r.Sheet, r.Measured*1e6, float64(r.Batch)/r.Measured,
			c.GraphKernels, c.GraphLaunches, float64(c.WeightBytes)/1e9, c.DtoHBytes, c.Allocs, c.Frees, c.Syncs,
			r.Predicted*1e6, float64(r.Batch)/r.Predicted)
	}
}

// runPerfModel is grpo bench --perf-model.
func runPerfModel(o benchOpts) error {
	if !(o.nodeMicros >= 0) {
		return usagef("--node-us %v: want a cost per graph node of 0 µs or more", o.nodeMicros)
	}
	if o.group < 0 {
		return usagef("--perf-model --group %d: want 1 or more rollouts per prompt", o.group)
	}
	sh := perfSharing{Group: max(o.group, 1), Prompt: o.prefill}
	if sh.Group > 1 && sh.Prompt < 1 {
		return usagef("--perf-model --group %d --prefill %d: want a prompt of at least 1 token to share", sh.Group, sh.Prompt)
	}
	rows, err := perfModelRows(perfShapes, perfBatches, perfContexts, sh, o.nodeMicros*1e-6, os.Stderr)
	if err != nil {
		return err
	}
	writePerfTable(stdout, rows, sh, o.nodeMicros*1e-6)
	return nil
}
