package perf

import (
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
)

// The table grpo bench --perf-model prints: for each shape, batch and
// context, the bytes and FLOPs of one static decode step of the sampler,
// the H200 roofline time, and what the real decode step asks of a
// device, counted on the null device.
var (
	Shapes   = []string{"qwen3-0.6b", "qwen3-4b", "qwen3-8b"}
	Batches  = []int{1, 64, 128, 256}
	Contexts = []int{512, 2048}
)

// LoRARank is the adapter the trainer samples with (lora.DefaultConfig:
// rank 16 on all seven projections).
const LoRARank = 16

// Sharing is the GRPO group the model assumes: Group rollouts forked from
// a prompt of Prompt positions (grpo bench --group, --prefill); Group 1
// shares nothing.
type Sharing struct{ Group, Prompt int }

// Row is one line of the table.
type Row struct {
	Shape           string
	Batch, Ctx      int
	Bytes           StepBytes
	FLOPs           float64
	Sheet, Measured float64 // roofline seconds: datasheet, measured ceilings
	Counts          cuda.Counts
	Predicted       float64 // seconds: Measured + a node cost per graph node
}

// Rows computes the table for shapes × batches × contexts: each shape
// built once on a null device (bf16 weights, a rank-LoRARank adapter on
// all seven projections), its base weights tagged so the counter sees
// the GEMMs read them. nodeCost is the assumed seconds per graph node
// added to the measured roofline. With sh.Group > 1 the KV bytes are
// SharedKVBytes' and the counted step reads the prompt once per group.
// progress, when not nil, hears of each shape as it is built.
func Rows(shapes []string, batches, contexts []int, sh Sharing, nodeCost float64, progress io.Writer) ([]Row, error) {
	var rows []Row
	for _, name := range shapes {
		cfg, ok := model.Shape(name)
		if !ok {
			return nil, fmt.Errorf("perf model: shape %q is unknown; known shapes: %v", name, model.ShapeNames())
		}
		if cfg.SparseLayers() > 0 {
			return nil, fmt.Errorf("perf model: shape %q is a mixture of experts; the model covers dense shapes", name)
		}
		if progress != nil {
			fmt.Fprintf(progress, "perf model: %s on the null device\n", name)
		}
		be := cuda.New(cuda.NewNullDevice())
		base := model.NewRandomParallel(cfg, be, 1, kernels.BF16)
		TagWeights(base, nil)
		lc := lora.DefaultConfig()
		lc.Rank, lc.Alpha = LoRARank, 2*LoRARank
		ad, err := lora.New(base, lc, 1)
		if err != nil {
			return nil, err
		}
		m := base.WithAdapter(ad)
		for _, b := range batches {
			for _, ctx := range contexts {
				counts, err := CountDecodeStep(m, b, ctx, sh.Group > 1)
				if err != nil {
					return nil, fmt.Errorf("perf model: %s batch %d context %d: %w", name, b, ctx, err)
				}
				r := Row{Shape: name, Batch: b, Ctx: ctx, Counts: counts,
					Bytes: DecodeBytesShared(cfg, b, sh.Group, float64(ctx), sh.Prompt, LoRARank, KVDType(be)),
					FLOPs: DecodeFLOPs(cfg, b, ctx, LoRARank)}
				r.Sheet = RooflineSeconds(r.Bytes.Total(), r.FLOPs, H200HBMBytes, H200BF16FLOPs)
				r.Measured = RooflineSeconds(r.Bytes.Total(), r.FLOPs, H200MeasuredHBMBytes, H200MeasuredBF16FLOPs)
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

// CountDecodeStep drives the sampler's static decode step (model.Decoder
// over a paged cache sized as DecodeCache) on m at batch sequences of
// context ctx: slot 0 prefilled with ctx−1 tokens and forked into the
// others (a GRPO group), then steps — the first op by op, the second
// captured, the rest replayed — and returns what the fourth step asked of
// the device. m must be on a CUDA backend (its counter). With shared the
// step reads the group's prompt once (kernels.AttentionSharedPrefix),
// else every row reads its own context; its launches are the same for
// any grouping (the grid covers every row).
func CountDecodeStep(m *model.Model, batch, ctx int, shared bool) (cuda.Counts, error) {
	be := m.Backend
	const steps = 4
	cache, err := DecodeCache(m, batch, ctx+steps)
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
		if c, err = Measure(be, func() error { return dec.Step(cache, tok, lp) }); err != nil {
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
