package estimate

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/loss"
	"github.com/grpo-dev/grpo/model"
)

// TestRecomputeExtraFLOPsMatchCountsOnEmu ties the estimate to the
// counters: for each recompute setting, the FLOPs the CUDA backend counts
// (under emu) for one micro-batch beyond what "none" counts equal the
// estimate's ExtraFLOPs for that setting, less the SwiGLU's elementwise
// FLOPs (swigluFLOPs per intermediate element of each layer whose SwiGLU
// reruns), which the estimate prices and the counter, counting matrix
// work only, does not. The micro-batch is two whole 32-token sequences,
// so the counted attention (each token's visible keys) equals the
// estimate's mean context exactly.
func TestRecomputeExtraFLOPsMatchCountsOnEmu(t *testing.T) {
	mc, err := model.LoadConfig(filepath.Join("..", "testdata", "models", "qwen3-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	const prompt, maxTok, micro = 25, 8, 64
	cfg := estimateConfig(4, 2, maxTok)
	cfg.MicroBatchTokens = micro
	train := []EnvShape{{Name: "e", Examples: 4, Rollouts: 1, PromptTokens: prompt, MaxTurns: 1, MaxTokens: maxTok}}
	be := emu.New()
	defer be.Close()
	m := model.NewRandom(mc, be, 1)
	defer m.Free()
	ad, err := lora.New(m, cfg.LoRA, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ad.Free()
	policy := m.WithAdapter(ad)
	samples := packedSamples(micro, prompt, maxTok, mc.VocabSize)
	counted := func(setting string) int64 {
		p, k, err := model.ParseRecomputeSetting(setting)
		if err != nil {
			t.Fatal(err)
		}
		policy.Recompute, policy.CheckpointLayers = p, k
		before := be.Counts()
		if _, err := loss.PolicyGradient(policy, samples, cfg.Loss, maxTok, micro); err != nil {
			t.Fatal(err)
		}
		return be.Counts().Sub(before).FLOPs
	}
	none := counted("none")
	L := mc.NumLayers
	swiglu := float64(micro) * swigluFLOPs * float64(mc.IntermediateSize) // one layer's rerun SwiGLU
	for _, setting := range []string{"swiglu", "selective", "layer:1", "swiglu+layer:1", "selective+layer:1", "layer"} {
		extra := counted(setting) - none
		c := *cfg
		c.Recompute = setting
		est, err := Memory(&c, mc, Options{Device: "cpu", Train: train})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(est.Recomputes, func(r RecomputeCost) bool { return r.Setting == setting })
		if i < 0 {
			t.Fatalf("recompute %s: not among the estimate's %+v", setting, est.Recomputes)
		}
		// The layers whose SwiGLU reruns: the checkpointed ones, and the
		// others when their policy recomputes it.
		p, k, _ := model.ParseRecomputeSetting(setting)
		if p == model.RecomputeLayer {
			p, k = model.RecomputeNone, L
		}
		reruns := k
		if p >= model.RecomputeSwiGLU {
			reruns = L
		}
		want := est.Recomputes[i].ExtraFLOPs - float64(reruns)*swiglu
		if float64(extra) != want {
			t.Errorf("recompute %s: %d extra FLOPs counted, the estimate's %g less SwiGLU's %g is %g",
				setting, extra, est.Recomputes[i].ExtraFLOPs, float64(reruns)*swiglu, want)
		}
		// SwiGLU alone reruns no matrix work; attention or a layer does.
		if (setting == "swiglu") != (extra == 0) {
			t.Errorf("recompute %s: %d extra FLOPs counted", setting, extra)
		}
	}
}
