package estimate

import (
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
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
// grouping. Training fits the H200 beside the weights. Sampling is the
// sampler's paged bf16 KV cache (Description.KVCache on cuda) for every
// rollout's worst case at once, 256 × 144 blocks of 16 tokens (54 GiB; it
// would be 108 GiB at f32): the whole plan fits in 139 GiB, and with the
// H200's 139 GiB free the KV plan needs no cut (one pass).
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
	// 2048-token prefill chunk, 16384 permuted rows: f32 router logits and
	// weights, i32 grouping, f32 x·Aᵀ, each layer's experts (i32); the
	// rows between ops — gathered input and expert output (hidden), gate,
	// up and the fused gate/up output — bf16, the forward being bf16
	// between ops over the sampler's bf16 cache (model's forwardAttention).
	if want := int64(4*(2048*(128+8)+16384*(3+3*16)+129+48*16384) + 2*16384*(2*2048+4*768)); moe != want {
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
	// 256 rollouts × 144 blocks × 16 tokens × 48 layers × 4 kv heads × 128 × 2 (K,V) × 2 B, and the
	// block table (an int32 per rollout and block); cuda captures graphs, so one block and one
	// table row more: the static decode step's padding slot (sampler.New).
	if want := int64((256*144+1)*16*48*4*128*2*2 + (256+1)*144*4); kv != want {
		t.Errorf("KV cache %d B, want %d (bf16 blocks and their table)", kv, want)
	}
	if e.Peak > h200 {
		t.Errorf("peak %s in %s exceeds the H200's 139 GiB", FormatBytes(e.Peak), e.PeakPhase)
	}
	t.Logf("resident %s, training %s, sampling %s (KV %s); peak %s in %s",
		FormatBytes(resident), FormatBytes(training), FormatBytes(e.PhaseBytes(PhaseSampling)), FormatBytes(kv), FormatBytes(e.Peak), e.PeakPhase)

	// With the H200's memory free the KV plan holds every rollout at once.
	e, err = Memory(cfg, mc, Options{Device: "cuda", WeightDType: "bfloat16", Available: &Available{Known: true, Bytes: h200}})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.KV) != 1 {
		t.Fatalf("%d KV plans, want the sampling phase's", len(e.KV))
	}
	if p := e.KV[0]; p.DType != kernels.BF16 || p.Bounded || p.Cap != 256 || p.Passes != 1 || p.Blocks != 256*144 {
		t.Errorf("KV plan %+v: want bf16, every one of the 256 rollouts at once in 256 × 144 blocks, one pass", p)
	}
	if e.Peak > h200 {
		t.Errorf("peak %s in %s with 139 GiB free exceeds it", FormatBytes(e.Peak), e.PeakPhase)
	}
}
