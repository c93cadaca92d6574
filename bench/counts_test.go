package bench

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels/cuda"
	_ "github.com/grpo-dev/grpo/kernels/emu" // registers the "emu" backend
	"github.com/grpo-dev/grpo/model"
)

// TestBenchJSONCountsOnEmu: Run on the CUDA backend
// reports, per decode step, per prefill and per train micro-batch, what
// the backend asked of its device; the decode step after warm-up is one
// graph launch with no allocation, free, upload or host-issued kernel and
// the two downloads of 8 bytes a sequence; the train micro-batch after the
// first allocates, frees and waits for nothing; GEMMs read the weights.
func TestBenchJSONCountsOnEmu(t *testing.T) {
	cfg := countsShape
	const batch = 8
	res, err := Run(randomModel(t, cfg, "emu"), Options{Prefill: 4, Decode: 3, Batch: batch, Repeat: 1,
		PrefillChunk: 64, Temperature: 1, NoMatmul: true, TrainSeqs: 2, TrainLen: 8, LoRARank: 4})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Counts
	if c.DecodeStep == nil || c.Prefill == nil || c.TrainMicroBatch == nil {
		t.Fatalf("counts missing: %+v", c)
	}
	d := *c.DecodeStep
	want := cuda.Counts{GraphLaunches: 1, GraphKernels: d.GraphKernels, Syncs: 2, DtoH: 2, DtoHBytes: 8 * batch, WeightBytes: d.WeightBytes, Atomics: d.Atomics, FLOPs: d.FLOPs}
	if d != want {
		t.Errorf("decode step: %v\nwant 1 graph launch, 2 syncs, 2 downloads of %d bytes and nothing else", d, 4*batch)
	}
	// Weights read once per step at least: the embedding-tied LM head and
	// every layer's projections, bf16.
	if min := int64(2 * cfg.VocabSize * cfg.HiddenSize); d.WeightBytes < min {
		t.Errorf("decode step reads %d weight bytes, less than the LM head's %d", d.WeightBytes, min)
	}
	// The last step writes position 6 and reads positions 0..6 of the
	// sampler's bf16 paged cache: 8 sequences · 7 positions · 2 layers ·
	// K and V · 16 (one KV head of 16) · 2 bytes = 7168 (f32 would be
	// twice that, crediting the decode figure with bytes it never read).
	if c.DecodeKVBytes != 7168 {
		t.Errorf("decode step KV bytes %d, want 8·7·2·2·16·2 = 7168 (bf16)", c.DecodeKVBytes)
	}
	if c.DecodeKVDType != "bf16" {
		t.Errorf("bench decoded over a %q KV cache, want the sampler's bf16 paged cache", c.DecodeKVDType)
	}
	if tr := *c.TrainMicroBatch; tr.Allocs != 0 || tr.Frees != 0 || tr.Syncs != 0 || tr.Launches == 0 {
		t.Errorf("train micro-batch after the first: %v; want launches but no alloc, free or sync", tr)
	}
	t.Logf("train micro-batch: %v", *c.TrainMicroBatch) // atomics: emu counts them (issue 18's bar is the flash backward's 0)
	if p := *c.Prefill; p.Launches == 0 || p.GEMMs == 0 {
		t.Errorf("prefill: %v; want launches and GEMMs", p)
	}
	// FLOPs by hand: per token every projection's GEMM, per head and
	// visible key attention's 4·headDim, the LM head over the rows whose
	// logits are taken. The decode step is a graph replay: its attention
	// is counted at the positions it runs at (the last step's, 6), not at
	// those it was captured at.
	h, q, kv, inter := int64(cfg.HiddenSize), int64(cfg.NumHeads*cfg.HeadDim), int64(cfg.NumKVHeads*cfg.HeadDim), int64(cfg.IntermediateSize)
	layers, lmHead := int64(cfg.NumLayers), 2*h*int64(cfg.VocabSize)
	linear := 2 * (h*(q+2*kv) + q*h + 3*h*inter)
	if want := layers*(batch*4*linear+4*q*batch*(1+2+3+4)) + batch*lmHead; c.Prefill.FLOPs != want {
		t.Errorf("prefill: %d FLOPs, want %d", c.Prefill.FLOPs, want)
	}
	if want := layers*(batch*linear+4*q*batch*7) + batch*lmHead; d.FLOPs != want {
		t.Errorf("decode step: %d FLOPs, want %d", d.FLOPs, want)
	}
	if tr := c.TrainMicroBatch; c.TrainStepFLOPs != tr.FLOPs || tr.FLOPs <= 0 {
		t.Errorf("train step %d FLOPs; want its one micro-batch's %d, positive", c.TrainStepFLOPs, tr.FLOPs)
	}
}

// TestBenchGroupOnEmu: with --group 4 the 8 sequences are 2 prompts
// prefilled once each and forked into 4 rollouts: the prefill figure is
// 2×4, the prefill reads a quarter of the tokens (fewer GEMM rows show
// as fewer bytes copied in: the token ids and positions of 8 tokens, not
// 32), and the decode step still reads every sequence's 7 positions.
func TestBenchGroupOnEmu(t *testing.T) {
	m := randomModel(t, countsShape, "emu")
	run := func(group int) *Results {
		res, err := Run(m, Options{Prefill: 4, Decode: 3, Batch: 8, Group: group,
			Repeat: 1, PrefillChunk: 64, Temperature: 1, NoMatmul: true})
		if err != nil {
			t.Fatalf("--group %d: %v", group, err)
		}
		return res
	}
	alone, grouped := run(1), run(4)
	if grouped.Figures[0].Name != "prefill 2x4" {
		t.Errorf("first figure %q, want prefill 2x4", grouped.Figures[0].Name)
	}
	if a, g := alone.Counts.Prefill.HtoDBytes, grouped.Counts.Prefill.HtoDBytes; g >= a {
		t.Errorf("grouped prefill uploads %d bytes, alone %d: the forked rollouts were prefilled too", g, a)
	}
	if d := grouped.Counts.DecodeStep; d == nil || d.GraphLaunches != 1 || d.DtoHBytes != 8*8 {
		t.Errorf("grouped decode step: %v, want one graph launch and 8 bytes back per sequence", d)
	}
	if grouped.Counts.DecodeKVBytes != 7168 {
		t.Errorf("grouped decode step KV bytes %d, want 7168 (each sequence reads its 7 positions)", grouped.Counts.DecodeKVBytes)
	}
	if _, err := Run(m, Options{Prefill: 4, Batch: 8, Group: 3, Repeat: 1, PrefillChunk: 64}); err == nil {
		t.Error("Group 3 of Batch 8: no error")
	}
}

// countsShape is a two-layer Qwen3 small enough for the emulator.
var countsShape = model.Config{ModelType: "qwen3", HiddenSize: 32, IntermediateSize: 64, NumLayers: 2,
	NumHeads: 2, NumKVHeads: 1, HeadDim: 16, VocabSize: 128, RMSNormEps: 1e-6, RopeTheta: 1e6,
	MaxPositions: 64, TieWordEmbeddings: true, HiddenAct: "silu"}
