package estimate

import (
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/model"
)

// TestSSDBackwardScratch: on a GPU, Nemotron-3-Nano's Mamba-2 backward
// takes two pool blocks for a micro-batch of 4,096 tokens (rollouts of
// 1,000 + 1,024 tokens: 2,023 rows each, so 3 runs, 1,365 tokens a run on
// average, which takes the chunked kernels, a state saved every 64
// tokens): the heads' shares of B's and C's gradients, 4,096 tokens × 64
// heads × 2 × 128 × 4 B = 256 MiB, and the saved states, (4,096/64 + 3) ×
// 64 heads × 64 × 128 × 4 B = 134 MiB, which the pool rounds up to its
// 256 MiB power-of-two block: 512 MiB resident. A model without Mamba-2
// layers and the CPU (no pool) price none.
func TestSSDBackwardScratch(t *testing.T) {
	cfg := estimateConfig(8, 2, 1024)
	cfg.MicroBatchTokens = 4096
	train := []EnvShape{{Name: "e", Examples: 8, Rollouts: 1, PromptTokens: 1000, MaxTurns: 1, MaxTokens: 1024}}
	nano, _ := model.Shape("nemotron-3-nano-30b-a3b")
	e, err := Memory(cfg, nano, Options{Device: "cuda", WeightDType: "bf16", Train: train})
	if err != nil {
		t.Fatal(err)
	}
	const heads, saved = 4096 * 64 * 2 * 128 * 4, (4096/64 + 3) * 64 * 64 * 128 * 4
	if heads != 256<<20 || !(saved > 128<<20 && saved <= 256<<20) {
		t.Fatalf("worked sizes %d and %d: not the 256 MiB blocks assumed", heads, saved)
	}
	if got := item(t, e, PhaseResident, "SSD backward scratch"); got != 512<<20 {
		t.Errorf("SSD backward scratch %d B, want %d (two 256 MiB blocks)", got, 512<<20)
	}
	for _, c := range []struct {
		shape, device string
	}{{"nemotron-3-nano-30b-a3b", "cpu"}, {"qwen3-8b", "cuda"}} {
		mc, _ := model.Shape(c.shape)
		e, err := Memory(cfg, mc, Options{Device: c.device, WeightDType: "bf16", Train: train})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range e.Items {
			if strings.HasPrefix(it.Name, "SSD backward scratch") {
				t.Errorf("%s on %s: %+v", c.shape, c.device, it)
			}
		}
	}
}
