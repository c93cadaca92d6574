package perf

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

// TestWindowedAttentionByHand prices a 4-layer model whose layers 0 and 2
// slide over 128 keys (8 heads × 64, 2 KV heads): a token at context 1000
// reads 1000 + 128 + 1000 + 128 positions; a causal pass over 1000 tokens
// reads (n+1)/2 = 500.5 per full layer and, per sliding layer, 1..128
// for the first 128 tokens and 128 after (a plain loop here); a decode
// step's K and V, shared prompt or not, are those positions' rows (bf16:
// 2 · 2 · 64 · 2 B = 512 a layer); without windows nothing changes.
func TestWindowedAttentionByHand(t *testing.T) {
	c := &model.Config{ModelType: "qwen3", HiddenSize: 64, IntermediateSize: 64, NumLayers: 4, NumHeads: 8, NumKVHeads: 2, HeadDim: 64, VocabSize: 100}
	c.SlidingWindows = []int{128, 0, 128, 0}
	per := 4.0 * 8 * 64
	if got, want := AttentionFLOPs(c, 1000), per*(2*1000+2*128); got != want {
		t.Errorf("AttentionFLOPs at 1000: %g, want %g", got, want)
	}
	var slide float64
	for tok := range 1000 {
		slide += float64(min(tok+1, 128))
	}
	if got, want := causalAttentionFLOPs(c, 1000), per*(2*500.5+2*slide/1000); got != want {
		t.Errorf("causal attention over 1000: %.9g, want %.9g", got, want)
	}
	if got, want := DecodeKVBytes(c, 3, 999, kernels.BF16), int64(3*(2*1000+2*128)*512); got != want {
		t.Errorf("DecodeKVBytes: %d, want %d", got, want)
	}
	// Groups of 4 on a 100-token prompt: the full layers read its 6 whole
	// blocks of 16 once per group, the sliding layers every row's 128.
	if got, want := SharedKVBytes(c, 8, 4, 1000, 100, kernels.BF16), float64((2*96+8*904)*2*512+8*2*128*512); got != want {
		t.Errorf("SharedKVBytes: %g, want %g", got, want)
	}
	c.SlidingWindows = nil
	if got, want := causalAttentionFLOPs(c, 1000), AttentionFLOPs(c, 500.5); got != want || got != per*4*500.5 {
		t.Errorf("without windows: causal %g, want %g", got, want)
	}
}
