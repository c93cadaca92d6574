package estimate

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/loss"
	"github.com/grpo-dev/grpo/model"
)

// TestChooseRecompute: "auto" takes the least recompute whose peak fits
// 95% of the free memory, the least-memory policy when none fits, and no
// recompute when the free memory is unknown; a named policy is taken as
// it is, whatever the memory.
func TestChooseRecompute(t *testing.T) {
	costs := []RecomputeCost{{Policy: model.RecomputeNone, Peak: 1000}, {Policy: model.RecomputeSwiGLU, Peak: 900},
		{Policy: model.RecomputeSelective, Peak: 800}, {Policy: model.RecomputeLayer, Peak: 300}}
	for _, c := range []struct {
		setting string
		avail   *Available
		want    model.Recompute
		why     string
	}{
		{"auto", &Available{Bytes: 2000, Known: true}, model.RecomputeNone, "every activation kept"},
		{"auto", &Available{Bytes: 1000, Known: true}, model.RecomputeSwiGLU, "recompute = none would need 1000 B"}, // 950 < 1000
		{"auto", &Available{Bytes: 900, Known: true}, model.RecomputeSelective, "swiglu would need 900 B"},
		{"auto", &Available{Bytes: 500, Known: true}, model.RecomputeLayer, "selective would need 800 B"},
		{"auto", &Available{Bytes: 100, Known: true}, model.RecomputeLayer, "no policy fits"},
		{"auto", &Available{Source: "unknown"}, model.RecomputeNone, "free memory unknown"},
		{"auto", nil, model.RecomputeNone, "free memory unknown"},
		{"selective", &Available{Bytes: 100, Known: true}, model.RecomputeSelective, "set in the config"},
		{"none", nil, model.RecomputeNone, "set in the config"},
	} {
		got, why, err := chooseRecompute(c.setting, costs, c.avail)
		if err != nil || got != c.want || !strings.Contains(why, c.why) {
			t.Errorf("%s with %+v: %s (%q, %v), want %s (%q)", c.setting, c.avail, got, why, err, c.want, c.why)
		}
	}
	if _, _, err := chooseRecompute("full", costs, nil); err == nil || !strings.Contains(err.Error(), `recompute = "full"`) {
		t.Errorf("recompute = full: %v", err)
	}
}

// TestMemoryRecomputeAuto: Memory sizes the training phase for the policy
// auto picks from Options.Available, and lists every policy's cost.
func TestMemoryRecomputeAuto(t *testing.T) {
	mc, _ := model.Shape("qwen3-1.7b")
	cfg := estimateConfig(8, 4, 2048)
	cfg.MicroBatchTokens = 32768
	e, err := Memory(cfg, mc, Options{Device: "cuda", Available: &Available{Bytes: 1 << 50, Known: true}})
	if err != nil {
		t.Fatal(err)
	}
	if e.Recompute != model.RecomputeNone || len(e.Recomputes) != 4 {
		t.Fatalf("ample memory: %s, %d policies", e.Recompute, len(e.Recomputes))
	}
	for i := 1; i < len(e.Recomputes); i++ {
		if a, b := e.Recomputes[i-1], e.Recomputes[i]; b.TrainingBytes >= a.TrainingBytes || b.ExtraFLOPs <= a.ExtraFLOPs {
			t.Errorf("%s → %s: training %d → %d B, extra FLOPs %g → %g; want less memory for more arithmetic",
				a.Policy, b.Policy, a.TrainingBytes, b.TrainingBytes, a.ExtraFLOPs, b.ExtraFLOPs)
		}
	}
	layer := e.Recomputes[model.RecomputeLayer]
	e, err = Memory(cfg, mc, Options{Device: "cuda", Available: &Available{Bytes: layer.Peak * 2, Known: true}})
	if err != nil {
		t.Fatal(err)
	}
	if e.Peak != layer.Peak || e.PhaseBytes(PhaseTraining) != layer.TrainingBytes {
		t.Errorf("chosen %s: peak %d, training %d; want layer's %d, %d", e.Recompute, e.Peak, e.PhaseBytes(PhaseTraining), layer.Peak, layer.TrainingBytes)
	}
}

// flopBackend counts the multiply-adds of every MatMul (2·m·n·k FLOPs).
type flopBackend struct {
	*cpu.Backend
	flops float64
}

func (f *flopBackend) MatMul(c, a, b kernels.Buffer, m, n, k int, transA, transB bool, alpha, beta float32) {
	f.flops += 2 * float64(m) * float64(n) * float64(k)
	f.Backend.MatMul(c, a, b, m, n, k, transA, transB, alpha, beta)
}

// TestRecomputeFLOPsCountGEMMs holds the FLOP model against the GEMMs a
// micro-batch really issues on the CPU backend (counted per call): what
// each policy adds is exactly the recomputed layers' projections and LoRA
// terms — nothing under swiglu and selective, whose SwiGLU and attention
// are not GEMMs; under layer every layer's forward GEMMs once more — and
// the no-recompute micro-batch's GEMMs are the model's less the first
// layer's skipped q/k/v input gradient (≈1/(2·layers) of the projection
// arithmetic, the bound).
func TestRecomputeFLOPsCountGEMMs(t *testing.T) {
	mc, err := model.LoadConfig(filepath.Join("..", "testdata", "models", "qwen3-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	const prompt, maxTok, micro = 25, 8, 64
	cfg := estimateConfig(4, 2, maxTok)
	cfg.MicroBatchTokens = micro
	train := []EnvShape{{Name: "e", Examples: 2, Rollouts: 2, PromptTokens: prompt, MaxTurns: 1, MaxTokens: maxTok}}
	e, err := Memory(cfg, mc, Options{Device: "cpu", Train: train})
	if err != nil {
		t.Fatal(err)
	}
	be := &flopBackend{Backend: cpu.New()}
	m := model.NewRandom(mc, be, 1)
	ad, err := lora.New(m, cfg.LoRA, 1)
	if err != nil {
		t.Fatal(err)
	}
	policy := m.WithAdapter(ad)
	projs, _ := loraTargets(cfg.LoRA)
	seqLen := prompt + maxTok - 1
	f := perTokenLayerFLOPs(mc, loraParamsPerLayer(mc, cfg.LoRA.Rank, projs), seqLen)
	gemmForward := f.forward - f.attention - f.swiglu // per token and layer
	var none float64
	for _, p := range model.RecomputePolicies() {
		policy.Recompute = p
		be.flops = 0
		if _, err := loss.PolicyGradient(policy, packedSamples(micro, prompt, maxTok, mc.VocabSize), cfg.Loss, maxTok, micro); err != nil {
			t.Fatal(err)
		}
		if p == model.RecomputeNone {
			none = be.flops
			continue
		}
		wantGEMM := 0.0
		if p == model.RecomputeLayer {
			wantGEMM = float64(micro) * float64(mc.NumLayers) * gemmForward
		}
		if got := be.flops - none; got != wantGEMM {
			t.Errorf("recompute %s: %g more GEMM FLOPs, want %g", p, got, wantGEMM)
		}
		// Beside the GEMMs: SwiGLU, and attention from selective on.
		nonGEMM := f.swiglu
		if p >= model.RecomputeSelective {
			nonGEMM += f.attention
		}
		nonGEMM *= float64(micro) * float64(mc.NumLayers)
		if est := e.Recomputes[p].ExtraFLOPs; est != wantGEMM+nonGEMM {
			t.Errorf("recompute %s: estimate %g extra FLOPs, want GEMMs %g + attention/SwiGLU %g", p, est, wantGEMM, nonGEMM)
		}
	}
	attn := float64(micro) * float64(mc.NumLayers) * (f.attention*3.5 + 3*f.swiglu)
	if gemm := e.TrainFLOPs - attn; none > gemm || none < gemm*(1-1/float64(2*mc.NumLayers)) {
		t.Errorf("no recompute: %g GEMM FLOPs counted, model's %g", none, gemm)
	}
}
