package estimate

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

// EvalPass describes an evaluation as grpo eval plays it: passes of at
// most Slots rollouts at once, and Rollouts in all, whose results are held
// until the results file is written.
type EvalPass struct {
	Name string
	// Slots is the rollouts of the largest pass (the sampler's KV slots).
	Slots int
	// PromptTokens is the longest prompt; 0 assumes AssumedPromptTokens.
	PromptTokens, MaxTokens, MaxTurns int
	// Rollouts is the evaluation's total.
	Rollouts int
	// LoRARank and LoRATargets describe an applied adapter (0 for none).
	LoRARank, LoRATargets int
}

// EvalResultsItem names the item of the held results.
const EvalResultsItem = "results held until written"

// resultBytesPerToken is what a held result keeps per completion token:
// the token id, its log-prob and mask (4 + 4 + 1 B), the decoded text in
// the chat messages and again in the JSONL row being written (~4 B each).
const resultBytesPerToken = 17

// resultOverhead is a result's fixed part: its maps, strings and slices.
const resultOverhead = 1024

// EvalMemory estimates what an evaluation holds beyond the loaded model:
// one pass's sampler (KV cache, activations, logits) and every rollout's
// result, taken at max_tokens per turn (the worst case). Peak is their sum.
func EvalMemory(mc *model.Config, device string, p EvalPass) *Estimate {
	e := &Estimate{Device: device}
	if p.PromptTokens == 0 {
		p.PromptTokens = AssumedPromptTokens
		e.note("eval %s: prompt length unknown; assumed %d tokens", p.Name, AssumedPromptTokens)
	}
	// Each slot is taken as its own example (no prompt shared), the
	// largest prefill an eval pass can make.
	shape := EnvShape{Name: p.Name, Examples: p.Slots, Rollouts: 1, PromptTokens: p.PromptTokens,
		MaxTurns: max(1, p.MaxTurns), MaxTokens: p.MaxTokens}
	plan := newKVPlan(mc, shape, device)
	plan.Phase = PhaseEval
	// A bf16 checkpoint on a backend with bf16 GEMMs: the layers write
	// bf16 casts of their inputs (as Memory prices them).
	desc, _ := kernels.DescribeDevice(device)
	casts := desc.BF16GEMM && (mc.TorchDType == "bfloat16" || mc.TorchDType == "bf16")
	samplingBytes(mc, uniformShape(mc, p.LoRARank, p.LoRATargets), shape, plan, casts, expertShard{}).emit(e, PhaseEval)
	e.KV = append(e.KV, plan)
	perResult := int64(p.PromptTokens)*12 + int64(p.MaxTokens*max(1, p.MaxTurns))*resultBytesPerToken + resultOverhead
	// Saturate far below MaxInt64: an absurd rollout count must neither
	// wrap around nor overflow the sums of finish.
	const most = int64(1) << 60
	results := most
	if int64(p.Rollouts) <= most/perResult {
		results = int64(p.Rollouts) * perResult
	}
	e.add(PhaseEval, EvalResultsItem, results,
		fmt.Sprintf("%d rollouts × ~%d B (prompt and completion tokens, text, metrics)", p.Rollouts, perResult))
	e.finish()
	return e
}
