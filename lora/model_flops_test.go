package lora_test

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
)

// The model with an adapter attached, on the emulated device: these tests
// live here, not in model or kernels/emu, because tests follow the
// dependency arrows and only lora and what is above it may import lora.

// handTrainFLOPs is one train micro-batch's matrix FLOPs without
// recompute, counted by hand from the shapes: n tokens whose positions sum
// (each + 1) to keys, r scored rows, a rank-rank adapter on all seven
// projections. Per layer, forward: every projection's GEMM (2·n·in·out),
// its LoRA shrink (2·n·in·rank) and expand (2·n·rank·out), attention
// 4·q·keys (q·k and p·v per head and visible key); backward: each
// projection's input gradient (2·n·out·in; the first layer's q/k/v one is
// skipped: its input is the frozen embedding), the LoRA dy·B and dB
// (2·n·out·rank each), dx (2·n·rank·in, skipped where the base one is) and
// dA (2·n·rank·in), the flash attention backward's 7 products
// (14·q·keys). The LM head runs forward and backward over the r rows.
func handTrainFLOPs(c *model.Config, n, r, rank, keys int64) int64 {
	h, q, kv, inter := int64(c.HiddenSize), int64(c.NumHeads*c.HeadDim), int64(c.NumKVHeads*c.HeadDim), int64(c.IntermediateSize)
	type proj struct {
		in, out int64
		qkv     bool
	}
	projs := []proj{{h, q, true}, {h, kv, true}, {h, kv, true}, {q, h, false}, {h, inter, false}, {h, inter, false}, {inter, h, false}}
	var f int64
	for l := range int64(c.NumLayers) {
		for _, p := range projs {
			f += 2*n*p.in*p.out + 2*n*p.in*rank + 2*n*rank*p.out // forward
			f += 2 * 2 * n * p.out * rank                        // dy·B, dB
			f += 2 * n * rank * p.in                             // dA
			if l > 0 || !p.qkv {
				f += 2*n*p.out*p.in + 2*n*rank*p.in // dx: base and LoRA
			}
		}
		f += 4*q*keys + 14*q*keys
	}
	return f + 2*2*r*h*int64(c.VocabSize)
}

// TestTrainMicroBatchFLOPsOnEmu: the FLOPs the CUDA backend counts for one
// train micro-batch of the qwen3 tiny model under emu (GEMMs by the
// counter, the LoRA and attention kernels by their ops) equal the hand
// count exactly. An op that stopped reporting its FLOPs (or reported a
// wrong formula) would make them differ: each op's share is in the sum.
func TestTrainMicroBatchFLOPsOnEmu(t *testing.T) {
	be := emu.New()
	defer be.Close()
	base, err := model.Load("../testdata/models/qwen3-tiny", be)
	if err != nil {
		t.Fatal(err)
	}
	cfg := lora.DefaultConfig()
	ad, err := lora.New(base, cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	m := base.WithAdapter(ad)
	// Two sequences of different lengths, so the attention term depends on
	// the positions, not on the token count alone.
	lens := []int{12, 7}
	var b model.Batch
	var rows, targets []int32
	var keys int64
	for s, n := range lens {
		for i := range n {
			b.Add(s, i, int32((s*31+i*7)%m.Config.VocabSize))
			keys += int64(i) + 1
			if i >= 3 {
				rows, targets = append(rows, int32(b.Len()-1)), append(targets, int32(i))
			}
		}
	}
	dlogp := be.Alloc(kernels.F32, len(rows))
	defer be.Free(dlogp)
	be.Fill(dlogp, 0.5, len(rows))
	before := be.Counts()
	tr, err := m.ForwardTrain(&b, rows, targets)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Backward(dlogp); err != nil {
		t.Fatal(err)
	}
	tr.Free()
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
	got := be.Counts().Sub(before).FLOPs
	want := handTrainFLOPs(m.Config, int64(b.Len()), int64(len(rows)), int64(cfg.Rank), keys)
	if got != want {
		t.Errorf("train micro-batch: %d FLOPs counted, %d by hand (%+d)", got, want, got-want)
	}
}
