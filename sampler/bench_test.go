package sampler

import (
	"context"
	"testing"

	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
)

// BenchmarkGenerate151k generates 8 tokens for each of 16 sequences over a
// narrow model with Qwen's 151,936-token vocabulary, so the time per op is
// dominated by what the sampler does with 16 logits rows per decode step
// (the LM head is 151936 × 32). Per-token params mix greedy, top-k, top-p
// and min-p.
func BenchmarkGenerate151k(b *testing.B) {
	cfg := &model.Config{ModelType: "qwen3", HiddenSize: 32, IntermediateSize: 48, NumLayers: 1, NumHeads: 4,
		NumKVHeads: 2, HeadDim: 8, VocabSize: 151_936, RMSNormEps: 1e-6, RopeTheta: 10000, HiddenAct: "silu"}
	m := model.NewRandom(cfg, cpu.New(), 3)
	s := newSampler(b, m, nil, Config{Slots: 16, MaxLen: 32})
	ps := make([][]int32, 16)
	params := make([]Params, 16)
	for i := range ps {
		ps[i] = []int32{int32(i), int32(1000 + i), int32(100_000 + i)}
		params[i] = goldenParams(i)
		params[i].MaxTokens = 8
	}
	for b.Loop() {
		if _, err := s.Generate(context.Background(), ps, params); err != nil {
			b.Fatal(err)
		}
	}
}
