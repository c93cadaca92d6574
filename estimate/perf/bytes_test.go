package perf

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/model"
)

// TestSharedKVBytesByHand: Qwen3-0.6B's bf16 cache holds 2 · 28 layers ·
// 8 KV heads · 128 dims · 2 B = 114,688 B a position. At batch 128 and
// context 512 with no sharing a step reads 128 · 512 of them:
// 7,516,192,768 B. In groups of 8 rollouts of a 256-token prompt (16
// whole blocks of 16) the 16 groups read the prompt once each: (16 · 256
// + 128 · 256) · 114,688 = 4,227,858,432 B, 43.75% less. A 250-token
// prompt shares 15 whole blocks (240 positions; its partly filled last
// block is each rollout's own): (16 · 240 + 128 · 272) · 114,688 =
// 4,433,379,328 B. At batch 20 in groups of 8 the last 4 rows are a third
// group: (3 · 256 + 20 · 256) · 114,688 = 675,282,944 B; at batch 17 the
// last row is alone and reads its prompt itself, as one more reader:
// (3 · 256 + 17 · 256) · 114,688 = 587,202,560 B.
func TestSharedKVBytesByHand(t *testing.T) {
	c, ok := model.Shape("qwen3-0.6b")
	if !ok {
		t.Fatal("no qwen3-0.6b shape")
	}
	for _, tc := range []struct {
		batch, group, ctx, prompt int
		want                      float64
	}{
		{128, 1, 512, 256, 7516192768},
		{128, 8, 512, 256, 4227858432},
		{128, 8, 512, 250, 4433379328},
		{20, 8, 512, 256, 675282944},
		{17, 8, 512, 256, 587202560},
	} {
		if got := SharedKVBytes(c, tc.batch, tc.group, float64(tc.ctx), tc.prompt, kernels.BF16); got != tc.want {
			t.Errorf("batch %d, group %d, ctx %d, prompt %d: %.0f KV bytes, want %.0f", tc.batch, tc.group, tc.ctx, tc.prompt, got, tc.want)
		}
	}
	if got, want := DecodeBytesShared(c, 128, 8, 512, 256, 16, kernels.BF16), DecodeBytes(c, 128, 512, 16, kernels.BF16); got.KV != 4227858432 || got.Weights != want.Weights || got.LoRA != want.LoRA || got.Logits != want.Logits {
		t.Errorf("DecodeBytesShared %+v: want DecodeBytes' %+v with KV 4227858432", got, want)
	}
}

// TestPerfModelSharedStep: the perf model with groups of 8 runs the
// counted step on AttentionSharedPrefix (on a 30M shape, batch 16,
// context 64), still one graph launch with nothing else but the two
// downloads, with more graph nodes than without groups (a prefix and a
// suffix pass before each layer's combine, instead of one decode kernel),
// and its KV column is SharedKVBytes' (cmd/grpo's TestPerfTable names
// the group in the header).
func TestPerfModelSharedStep(t *testing.T) {
	shared, err := Rows([]string{"qwen3-30m"}, []int{16}, []int{64}, Sharing{Group: 8, Prompt: 40}, 1.5e-6, nil)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Rows([]string{"qwen3-30m"}, []int{16}, []int{64}, Sharing{Group: 1}, 1.5e-6, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, p := shared[0].Counts, plain[0].Counts
	// The FLOPs are the plain step's: sharing changes what attention
	// reads, not what it computes.
	want := cuda.Counts{GraphLaunches: 1, GraphKernels: c.GraphKernels, Syncs: 2, DtoH: 2, DtoHBytes: 8 * 16, WeightBytes: c.WeightBytes, FLOPs: p.FLOPs}
	if c != want || p.FLOPs == 0 {
		t.Errorf("shared decode step after warm-up: %v\nwant 1 graph launch, 2 downloads and their waits, the plain step's %d FLOPs, nothing else", c, p.FLOPs)
	}
	cfg, _ := model.Shape("qwen3-30m")
	if c.GraphKernels <= p.GraphKernels || c.GraphKernels > p.GraphKernels+2*int64(cfg.NumLayers) {
		t.Errorf("graph of %d nodes with groups, %d without: want 1 or 2 more a layer (%d layers)", c.GraphKernels, p.GraphKernels, cfg.NumLayers)
	}
	if got, want := shared[0].Bytes.KV, SharedKVBytes(cfg, 16, 8, 64, 40, kernels.BF16); got != want || got >= plain[0].Bytes.KV {
		t.Errorf("KV %.0f B with groups, want %.0f (and under %.0f without)", got, want, plain[0].Bytes.KV)
	}
}
