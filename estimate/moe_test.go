package estimate

import (
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/model"
)

// h200 is the memory an H200 reports (cuMemGetInfo's total, 139.8 GiB
// less what the driver keeps): the Lab's single-GPU target for
// Qwen3-30B-A3B.
const h200 = 139 << 30

// TestEstimateQwen3MoE30B sizes the Lab's default model, Qwen3-30B-A3B
// (bf16 on cuda), for 256 rollouts (32 prompts × 8) of up to 2048 tokens
// with rank-16 adapters on attention and on every expert, micro-batches
// of 4096 tokens. The parameter counts are HF's (30.5B, 3.35B active;
// the experts hold 28.99B); the items name the experts' activations and
// grouping. Training fits the H200 beside the weights. Sampling is the KV
// cache of 256 × 2304 tokens: at f32 per element (this tree's cache, 108
// GiB) it does not fit, at bf16 (the paged bf16 cache, 54 GiB) the whole
// plan does, which the test then requires.
func TestEstimateQwen3MoE30B(t *testing.T) {
	cfg := estimateConfig(256, 8, 2048)
	cfg.Model = "Qwen/Qwen3-30B-A3B-Instruct-2507"
	cfg.MicroBatchTokens = 4096
	mc, _ := model.Shape("qwen3-30b-a3b")
	e, err := Memory(cfg, mc, Options{Device: "cuda", WeightDType: "bfloat16"})
	if err != nil {
		t.Fatal(err)
	}
	if e.BaseParams != 30_532_122_624 || mc.ActiveParamCount() != 3_353_032_704 {
		t.Errorf("params %d (active %d), want HF's 30,532,122,624 (3,353,032,704)", e.BaseParams, mc.ActiveParamCount())
	}
	// 48 layers × (128 experts × 16·(2·(2048+768) + (768+2048)) + 16·(2·2048+4096) + 2·16·(2048+512) + 16·(4096+2048)).
	const experts, attn = 48 * 128 * 16 * 3 * (2048 + 768), 48 * 16 * ((2048 + 4096) + 2*(2048+512) + (4096 + 2048))
	if e.TrainableParams != experts+attn {
		t.Errorf("trainable %d, want %d (experts %d + attention %d)", e.TrainableParams, experts+attn, experts, attn)
	}
	if got, want := item(t, e, PhaseResident, "base weights"), int64(30_532_122_624*2); got != want {
		t.Errorf("weights %d B, want %d", got, want)
	}
	moe := item(t, e, PhaseSampling, "expert activations")
	// 2048-token prefill chunk, 16384 permuted rows.
	if want := int64(4 * (2048*(128+8) + 16384*(3+2*2048+4*768+3*16) + 129 + 48*16384)); moe != want {
		t.Errorf("sampling expert activations %d, want %d", moe, want)
	}
	if !strings.Contains(strings.Join(e.Assumptions, "\n"), "sparse layers' expert activations and grouping") {
		t.Error("no note on the trace's expert activations")
	}
	resident, training := e.PhaseBytes(PhaseResident), e.PhaseBytes(PhaseTraining)
	if resident+training > h200 {
		t.Errorf("weights + training %s exceed the H200's 139 GiB", FormatBytes(resident+training))
	}
	kv := item(t, e, PhaseSampling, "KV cache")
	perElem := kv / (256 * 2304 * 48 * 4 * 128 * 2)
	switch perElem {
	case 2:
		if e.Peak > h200 {
			t.Errorf("peak %s in %s exceeds the H200's 139 GiB", FormatBytes(e.Peak), e.PeakPhase)
		}
	case 4:
		if e.PeakPhase != PhaseSampling || e.Peak <= h200 {
			t.Errorf("peak %s in %s: the f32 KV cache of 256 × 2304 tokens should be the phase over 139 GiB", FormatBytes(e.Peak), e.PeakPhase)
		}
	default:
		t.Errorf("KV cache %d B is %d B per element", kv, perElem)
	}
	t.Logf("resident %s, training %s, sampling %s (KV %s at %d B per element); peak %s",
		FormatBytes(resident), FormatBytes(training), FormatBytes(e.PhaseBytes(PhaseSampling)), FormatBytes(kv), perElem, FormatBytes(e.Peak))
}
