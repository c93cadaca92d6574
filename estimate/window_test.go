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

// TestGptOss20bWindowSaving prices gpt-oss-20b's cache (model.Shape: 24
// layers, every other one sliding over 128 keys, 8 KV heads × 64; bf16 on a GPU,
// whose sampler adds a padding slot and block) for 256 single-turn
// rollouts of 1024 tokens in blocks of 16: 16,384 + 1 blocks of 16
// positions × 24 layers × 2 (K,V) × 8 × 64 × 2 B = 768 KiB before, 12 GiB;
// now the 12 full layers keep those and the 12 sliding layers 257 ·
// (BlocksFor(127) + 1 = 9) + BlocksFor(2048) + 257 = 2,698 blocks, with a
// second table of 257 × 64 int32: 6.99 GiB, 5.01 GiB (41.8%) less.
func TestGptOss20bWindowSaving(t *testing.T) {
	mc, ok := model.Shape("gpt-oss-20b")
	if !ok || mc.NumLayers != 24 || mc.SlidingLayers() != 12 || mc.LargestWindow() != 128 || mc.KVWidth() != 8*64 {
		t.Fatalf("gpt-oss-20b's shape: %v", mc)
	}
	shape := EnvShape{Name: "e", Examples: 256, Rollouts: 1, PromptTokens: 512, MaxTurns: 1, MaxTokens: 512}
	windowed := newKVPlan(mc, shape, "cuda")
	plain := *mc
	plain.SlidingWindows = nil // as every layer was priced before
	before := newKVPlan(&plain, shape, "cuda")
	const layerBlock = 16 * 2 * 8 * 64 * 2 // one layer's block, bf16
	table := int64(257 * 64 * 4)
	if want := int64(16385)*24*layerBlock + table; before.Bytes() != want {
		t.Errorf("without windows: %d bytes, want %d", before.Bytes(), want)
	}
	if want := int64(16385)*12*layerBlock + int64(2698)*12*layerBlock + 2*table; windowed.WindowBlocks != 2698 || windowed.Bytes() != want {
		t.Errorf("with windows: %d sliding blocks, %d bytes; want 2698, %d", windowed.WindowBlocks, windowed.Bytes(), want)
	}
	t.Logf("gpt-oss-20b KV, 256 × 1024 on a GPU: %.3f GiB before, %.3f GiB with the sliding pool (saves %.3f GiB, %.1f%%)",
		float64(before.Bytes())/(1<<30), float64(windowed.Bytes())/(1<<30), float64(before.Bytes()-windowed.Bytes())/(1<<30),
		100*float64(before.Bytes()-windowed.Bytes())/float64(before.Bytes()))
}
