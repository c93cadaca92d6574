package estimate

import (
	"path/filepath"
	"testing"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
)

// emuCountingBackend is the CUDA backend on the emulated device with a
// ledger of live buffer bytes at their stored sizes (bf16 2 B): the
// device's own scratch pool (a GEMM's bf16 copy of its activations) is
// the estimate's resident item, not the phases'.
type emuCountingBackend struct {
	*cuda.Backend
	ledger
}

func (c *emuCountingBackend) Alloc(dt kernels.DType, n int) kernels.Buffer {
	c.add(int64(n) * int64(dt.Size()))
	return c.Backend.Alloc(dt, n)
}

func (c *emuCountingBackend) Free(b kernels.Buffer) {
	c.add(-int64(b.Len()) * int64(b.DType().Size()))
	c.Backend.Free(b)
}

// TestEstimateMatchesAllocationsOnEmu is TestEstimateMatchesAllocations
// on a GPU backend (the CUDA backend under emu) with bf16 weights: the
// sampling and training estimates equal the peak of live buffer bytes
// exactly, training under every recompute setting, and with the KL
// reference's trace (under none, where it sets the peak, and layer:1,
// where the backward does). Here the layers write bf16 casts of their
// GEMM inputs (model/layer.go allocCasts) that the CPU backend never
// allocates: unpriced, the estimate fell short by them (sampling 38,912
// bytes; training 34,816, and 67,584 with the reference's trace).
// Nemotron-H (Mamba-2, attention, MoE and relu² MLP layers; the latent
// variant's MoE projects to a smaller width first) runs the Mamba-2
// kernels on the device: their pooled backward scratch is the device's,
// a resident item (SSDBackwardPoolBytes), not the phases'.
func TestEstimateMatchesAllocationsOnEmu(t *testing.T) {
	for _, name := range []string{"qwen3-tiny", "nemotron_h-tiny", "nemotron_h-latent-tiny"} {
		t.Run(name, func(t *testing.T) {
			mc, err := model.LoadConfig(filepath.Join("..", "testdata", "models", name))
			if err != nil {
				t.Fatal(err)
			}
			const slots, prompt, maxTok, micro = 4, 25, 8, 64
			cfg := estimateConfig(slots, 2, maxTok)
			cfg.MicroBatchTokens = micro
			cfg.LoRA.TargetModules = allocTargets(mc)
			e, be, policy := emuSampledPolicy(t, cfg, mc, slots, prompt, maxTok)
			gen := be.samplingPeak(t, policy, slots, prompt, maxTok)
			if want := e.PhaseBytes(PhaseSampling); gen != want {
				t.Errorf("sampling: allocated %d, estimate %d (diff %d)", gen, want, want-gen)
			}
			stepSamples := append(packedSamples(micro, prompt, maxTok, mc.VocabSize), packedSamples(micro, prompt, maxTok, mc.VocabSize)...)
			for _, beta := range []float64{0, 0.1} {
				settings := []string{"none", "swiglu", "selective", "layer:1", "swiglu+layer:1", "selective+layer:1", "layer"}
				if beta > 0 {
					settings = []string{"none", "layer:1"}
				}
				for i, setting := range settings {
					// Every other setting with a behaviour correction: π_old's copy.
					cfg.Loss.Beta, cfg.Recompute, cfg.Loss.ISCorrection = beta, setting, []string{"none", "sequence_mask"}[i%2]
					e, trained := be.trainingPhase(t, cfg, mc, emuOptions(slots, prompt, maxTok), policy, stepSamples, maxTok, micro)
					if want := e.PhaseBytes(PhaseTraining); trained != want {
						t.Errorf("training, beta %g, correction %s, recompute %s: allocated %d, estimate %d (diff %d)", beta, cfg.Loss.ISCorrection, setting, trained, want, want-trained)
					}
				}
			}
		})
	}
}

// emuSampledPolicy is sampledPolicy on the emulated GPU: the estimate of
// cfg for slots single-turn rollouts of prompt + maxTok tokens on mc
// (emuOptions), and a counting emu backend (closed when t ends) with a
// random policy of cfg's adapter on it. Its weights are those a bf16
// checkpoint loads to, so MatMul takes the fused path's bf16 casts:
// NewRandomParallel's bf16, which keeps in f32 what Load keeps in f32
// whatever the checkpoint (Mamba-2's A_log, dt_bias and D among them,
// which SSDScan reads in f32).
func emuSampledPolicy(t *testing.T, cfg *config.Config, mc *model.Config, slots, prompt, maxTok int) (*Estimate, *emuCountingBackend, *model.Model) {
	t.Helper()
	e, err := Memory(cfg, mc, emuOptions(slots, prompt, maxTok))
	if err != nil {
		t.Fatal(err)
	}
	inner := emu.New()
	t.Cleanup(func() { inner.Close() })
	be := &emuCountingBackend{Backend: inner}
	m := model.NewRandomParallel(mc, be, 1, kernels.BF16)
	ad, err := lora.New(m, cfg.LoRA, 1)
	if err != nil {
		t.Fatal(err)
	}
	return e, be, m.WithAdapter(ad)
}

// emuOptions is the estimate's options for emu with bf16 weights and
// slots single-turn rollouts of prompt + maxTok tokens: the estimate knows
// emu as what it runs, the cuda device's code.
func emuOptions(slots, prompt, maxTok int) Options {
	return Options{Device: "cuda", WeightDType: "bf16", Train: singleTurn(slots, prompt, maxTok)}
}

// TestEstimateMatchesAllocationsWithWindowsOnEmu is the sampling half of
// TestEstimateMatchesAllocationsOnEmu with a sliding window of 32 in
// layer 0 (bf16 weights and cache, the padding slot and block): the
// sampler's two pools, each with its table, equal the estimate's
// sampling phase exactly. At 4 rollouts of 65 tokens the sliding pool is
// capped at the full pool's 4 · 5 + 1 blocks (one Forward call's 2048
// positions alone would take 128).
func TestEstimateMatchesAllocationsWithWindowsOnEmu(t *testing.T) {
	mc, err := model.LoadConfig(filepath.Join("..", "testdata", "models", "qwen3-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	mc.SlidingWindows = make([]int, mc.NumLayers)
	mc.SlidingWindows[0] = 32
	const slots, prompt, maxTok = 4, 25, 40
	cfg := estimateConfig(slots, 2, maxTok)
	cfg.LoRA.TargetModules = []string{"q_proj", "k_proj", "o_proj", "up_proj"}
	e, be, policy := emuSampledPolicy(t, cfg, mc, slots, prompt, maxTok)
	gen := be.samplingPeak(t, policy, slots, prompt, maxTok)
	if want := e.PhaseBytes(PhaseSampling); gen != want {
		t.Errorf("sampling: allocated %d, estimate %d (diff %d)", gen, want, want-gen)
	}
	if p := e.KV[0]; p.Pad != 1 || p.WindowBlocks != slots*5+1 || p.WindowBlockBytes == 0 {
		t.Errorf("plan: pad %d, %d sliding blocks of %d B; want 1, %d, nonzero", p.Pad, p.WindowBlocks, p.WindowBlockBytes, slots*5+1)
	}
}
