package estimate

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/rollout"
)

// TestEstimateMatchesAllocationsWithWindows is the sampling half of
// TestEstimateMatchesAllocations for a model with a sliding-window layer
// (qwen3-tiny with a window of 32 in layer 0, as gpt-oss alternates
// them): 16 rollouts of 25 + 487 tokens (the model's 512), long enough
// that the sliding pool (each rollout's BlocksFor(31)+1 = 3 blocks of 16,
// and one Forward call's 2048 positions: 128 + 16; 192 blocks) is below
// the full pool's 16 × 32 = 512. The sampler's
// peak of live bytes equals the estimate's sampling phase exactly, and
// the estimate's pool is the one the sampler's cache allocated.
func TestEstimateMatchesAllocationsWithWindows(t *testing.T) {
	mc, err := model.LoadConfig(filepath.Join("..", "testdata", "models", "qwen3-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	mc.SlidingWindows = make([]int, mc.NumLayers)
	mc.SlidingWindows[0] = 32
	const slots, prompt, maxTok = 16, 25, 487
	cfg := estimateConfig(slots, 2, maxTok)
	cfg.LoRA.TargetModules = []string{"q_proj", "k_proj", "o_proj", "up_proj"}
	e, be, policy := sampledPolicy(t, cfg, mc, slots, prompt, maxTok)
	gen := be.samplingPeak(t, policy, slots, prompt, maxTok)
	if want := e.PhaseBytes(PhaseSampling); gen != want {
		t.Errorf("sampling: allocated %d, estimate %d (diff %d)", gen, want, want-gen)
	}
	plan := e.KV[0]
	perSeq := model.BlocksFor(rollout.CacheLen(mc, prompt, maxTok, 1), 16)
	if plan.Blocks != slots*perSeq || plan.WindowBlocks != 3*slots+128+slots || plan.WindowBlocks >= plan.Blocks {
		t.Errorf("pools: %d full blocks (want %d), %d sliding (want %d, below the full pool)", plan.Blocks, slots*perSeq, plan.WindowBlocks, 3*slots+128+slots)
	}
	// The window's saving: the sliding layer's K and V for the blocks the
	// sliding pool does not hold.
	unwindowed := *mc
	unwindowed.SlidingWindows = nil
	u := newKVPlan(&unwindowed, singleTurn(slots, prompt, maxTok)[0], "cpu")
	if saved, want := u.Bytes()-plan.Bytes(), int64(plan.Blocks-plan.WindowBlocks)*plan.WindowBlockBytes-u.tableBytes(); saved != want || saved <= 0 {
		t.Errorf("the window saves %d bytes, want %d", saved, want)
	}
	var item string
	for _, it := range e.Items {
		if it.Phase == PhaseSampling && strings.HasPrefix(it.Name, "KV cache") {
			item = it.Detail
		}
	}
	if !strings.Contains(item, "192 blocks × 1 sliding-window layers (window 32: 3 blocks a rollout)") {
		t.Errorf("KV cache item: %q, want the sliding pool named", item)
	}
}
