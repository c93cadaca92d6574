package estimate

import (
	"path/filepath"
	"testing"

	"github.com/grpo-dev/grpo/model"
)

// TestEstimateSamplingAdaptedLinearAndSharedExpert: the sampling phase is
// priced as allocated with the DeltaNet layers' and the shared expert's
// projections adapted, whose x·Aᵀ the inference set keeps once per
// projection (at the largest rank, for every layer) rather than once per
// layer. Priced per layer by formula, the estimate was 25,600 bytes over
// for qwen3_5-tiny with in_proj_qkv and out_proj adapted.
func TestEstimateSamplingAdaptedLinearAndSharedExpert(t *testing.T) {
	for _, tc := range []struct {
		name    string
		targets []string
	}{
		{"qwen3_5-tiny", []string{"q_proj", "in_proj_qkv", "out_proj", "up_proj"}},
		{"qwen3_5-moe-tiny", []string{"q_proj", "in_proj_z", "gate_proj", "shared_expert_gate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mc, err := model.LoadConfig(filepath.Join("..", "testdata", "models", tc.name))
			if err != nil {
				t.Fatal(err)
			}
			const slots, prompt, maxTok = 4, 25, 8
			cfg := estimateConfig(slots, 2, maxTok)
			cfg.LoRA.TargetModules = tc.targets
			cfg.Loss.RoutingReplay = false
			e, be, policy := sampledPolicy(t, cfg, mc, slots, prompt, maxTok)
			gen := be.samplingPeak(t, policy, slots, prompt, maxTok)
			if want := e.PhaseBytes(PhaseSampling); gen != want {
				t.Errorf("sampling: allocated %d, estimate %d (diff %d)", gen, want, want-gen)
			}
		})
	}
}
