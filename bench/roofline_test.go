package bench

import (
	"math"
	"testing"

	"github.com/grpo-dev/grpo/estimate/perf"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

// TestRooflineFigures checks one figure of each kind by hand.
func TestRooflineFigures(t *testing.T) {
	c := &model.Config{ModelType: "qwen3", HiddenSize: 4, IntermediateSize: 8, NumLayers: 1, NumHeads: 2,
		NumKVHeads: 1, HeadDim: 2, VocabSize: 10, TieWordEmbeddings: true}
	o := Options{Batch: 2, Prefill: 3, Decode: 2, TrainSeqs: 1, TrainLen: 3}
	// linear per token: 2·(4·4 + 2·4·2 + 4·4 + 3·4·8 + 10·4) = 2·184 = 368.
	if got := perf.LinearFLOPs(c); got != 368 {
		t.Fatalf("LinearFLOPs = %v, want 368", got)
	}
	figs := map[string]float64{}
	for _, r := range rooflineFigures(c, 4, kernels.F32, o, 1e9, 1e6, 0) {
		figs[r.Name] = r.Value
	}
	// prefill: mean context 2, attention 4·1·2·2·2 = 32; the LM head (2·10·4 =
	// 80) for 1 token of 3: (368 − 80·2/3 + 32)·1e9 FLOP/s = 0.34667 TFLOP/s.
	want := (368 - 80*2.0/3 + 32) * 1e9 / 1e12
	if got := figs["prefill 2x3 TFLOP/s"]; math.Abs(got-want) > 1e-12 {
		t.Errorf("prefill TFLOP/s = %v, want %v", got, want)
	}
	if got, want := figs["prefill 2x3 MFU of bf16 peak"], 100*want*1e12/perf.H200BF16FLOPs; math.Abs(got-want) > 1e-12 {
		t.Errorf("prefill MFU = %v, want %v", got, want)
	}
	// decode: context 3 + 1.5 = 4.5; per step the f32 weights, 4·(200
	// parameters: the 184 above and 16 of norms (2·4 + 2·2 + 4) + the 2
	// gathered rows of 4) = 832 B, + 2 sequences · (KV 2·1·1·2·4·4.5 = 72 B
	// + logits written and read 2·4·10 = 80 B) = 1136 B; 5e5 steps/s →
	// 0.568 GB/s.
	if got := figs["decode batch 2 HBM"]; math.Abs(got-0.568) > 1e-12 {
		t.Errorf("decode GB/s = %v, want 0.568", got)
	}
	// bf16 KV (the sampler's cache on a GPU): KV 36 B a sequence, per step
	// 832 + 2·(36 + 80) = 1064 B → 0.532 GB/s.
	found := false
	for _, r := range rooflineFigures(c, 4, kernels.BF16, o, 0, 1e6, 0) {
		if r.Name == "decode batch 2 HBM" {
			found = true
			if math.Abs(r.Value-0.532) > 1e-12 {
				t.Errorf("decode GB/s with bf16 KV = %v, want 0.532", r.Value)
			}
		}
	}
	if !found {
		t.Error("no decode figure with bf16 KV")
	}
	if _, ok := figs["lora train 1x3 TFLOP/s"]; ok {
		t.Error("a skipped train figure (rate 0) was reported")
	}
	// train at 1e9 tok/s: 4N = 2·368 plus attention backward (mean context
	// 2: 3·32); the 6N figure is 3·368 per token over the bf16 peak.
	figs = map[string]float64{}
	for _, r := range rooflineFigures(c, 4, kernels.F32, o, 0, 0, 1e9) {
		figs[r.Name] = r.Value
	}
	if got, want := figs["lora train 1x3 TFLOP/s"], (2*368+3*32)*1e9/1e12; math.Abs(got-want) > 1e-12 {
		t.Errorf("train TFLOP/s = %v, want %v", got, want)
	}
	if got, want := figs["lora train 1x3 MFU of bf16 peak at 6N"], 100*3*368*1e9/perf.H200BF16FLOPs; math.Abs(got-want) > 1e-12 {
		t.Errorf("train MFU at 6N = %v, want %v", got, want)
	}
	// Strict 4N: 2·368 per token, attention left out.
	if got, want := figs["lora train 1x3 TFLOP/s at 4N"], 2*368*1e9/1e12; math.Abs(got-want) > 1e-12 {
		t.Errorf("train TFLOP/s at 4N = %v, want %v", got, want)
	}
	if got, want := figs["lora train 1x3 MFU of bf16 peak at 4N"], 100*2*368*1e9/perf.H200BF16FLOPs; math.Abs(got-want) > 1e-12 {
		t.Errorf("train MFU at 4N = %v, want %v", got, want)
	}
}

// TestHFUFigures checks the hardware FLOP utilisation figures by hand on
// TestRooflineFigures' model: counted FLOPs per token over the bf16 peak,
// and their ratio to the model count.
func TestHFUFigures(t *testing.T) {
	c := &model.Config{ModelType: "qwen3", HiddenSize: 4, IntermediateSize: 8, NumLayers: 1, NumHeads: 2,
		NumKVHeads: 1, HeadDim: 2, VocabSize: 10, TieWordEmbeddings: true}
	o := Options{Batch: 2, Prefill: 3, TrainSeqs: 4, TrainLen: 3}
	figs := map[string]float64{}
	// Prefill: 2·3 tokens counted 2400 FLOPs, 400 a token; train: 12
	// tokens 12,000, 1000 a token; both at 1e9 tok/s.
	for _, r := range hfuFigures(c, o, 2400, 12000, 1e9, 1e9) {
		figs[r.Name] = r.Value
	}
	checks := []struct {
		name string
		want float64
	}{
		{"prefill 2x3 HFU of bf16 peak", 100 * 400 * 1e9 / perf.H200BF16FLOPs},
		{"prefill 2x3 counted/model FLOPs", 400 / (368 - 80*2.0/3 + 32)}, // the model count of TestRooflineFigures
		{"lora train 4x3 HFU of bf16 peak", 100 * 1000 * 1e9 / perf.H200BF16FLOPs},
		{"lora train 4x3 counted/model FLOPs", 1000.0 / (2*368 + 3*32)},
	}
	for _, ch := range checks {
		if got, ok := figs[ch.name]; !ok || math.Abs(got-ch.want) > 1e-12*ch.want {
			t.Errorf("%s = %v (reported: %v), want %v", ch.name, got, ok, ch.want)
		}
	}
	// Without a count (a backend that does not count) there is no figure.
	if figs := hfuFigures(c, o, 0, 0, 1e9, 1e9); len(figs) != 0 {
		t.Errorf("figures without counts: %v", figs)
	}
}

// TestRooflineFiguresSharedKV: the bench's decode HBM figure over --group 8
// --prefill 256 --decode 31 (mean context 256 + 16) counts the prompt
// blocks once a group: Qwen3-0.6B's bf16 cache holds 114,688 B a
// position (perf's TestSharedKVBytesByHand).
func TestRooflineFiguresSharedKV(t *testing.T) {
	c, ok := model.Shape("qwen3-0.6b")
	if !ok {
		t.Fatal("no qwen3-0.6b shape")
	}
	o := Options{Batch: 128, Group: 8, Prefill: 256, Decode: 31}
	var hbm float64
	for _, r := range rooflineFigures(c, 2, kernels.BF16, o, 0, 128, 0) { // one step a second
		if r.Name == "decode batch 128 HBM" {
			hbm = r.Value
		}
	}
	b := perf.DecodeBytes(c, 128, 272, 0, kernels.BF16)
	want := (b.Total() - b.KV + (16*256+128*16)*114688) / 1e9
	if hbm != want {
		t.Errorf("decode HBM figure %v GB/s at one step a second, want %v (prompt blocks read once a group)", hbm, want)
	}
}
