package estimate

import (
	"fmt"
	"slices"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/model"
)

// RecomputeCost is what one recompute policy (model.Recompute) costs a
// run: the training phase's memory and the run's peak under it, and the
// arithmetic it adds to each micro-batch.
type RecomputeCost struct {
	Policy        model.Recompute `json:"policy"`
	TrainingBytes int64           `json:"training_bytes"`
	Peak          int64           `json:"peak_bytes"`
	// ExtraFLOPs is what the backward recomputes per micro-batch, on top
	// of the micro-batch's forward and backward (Estimate.TrainFLOPs).
	ExtraFLOPs float64 `json:"extra_flops"`
	items      []MemItem
}

// autoHeadroom is the share of the free memory recompute = "auto" leaves
// unplanned: allocator rounding and fragmentation, the CUDA context and
// cuBLAS workspaces are not itemised, and a policy chosen to the last byte
// would fail its first micro-batch instead of running a little slower.
const autoHeadroom = 0.05

// swigluFLOPs counts SwiGLU's silu(g)·u per element: exp, add, divide and
// two multiplies.
const swigluFLOPs = 5

// fullPerLayer is every activation a training trace keeps per token and
// layer without recompute (model/layer.go trainingActs), f32 elements, lr
// the LoRA shrinks' Σ ranks.
func fullPerLayer(mc *model.Config, lr int64) int64 {
	h, q, kv, inter, _ := dims(mc)
	heads, kvHeads := int64(mc.NumHeads), int64(mc.NumKVHeads)
	n := 5*h + 2 + 2*q + 2*kv + heads + 3*inter + lr
	if mc.Arch().QKNorm {
		n += q + kv + heads + kvHeads
	}
	return n
}

// recomputedPerLayer is what the backward of one layer recomputes per
// token under p (model/recompute.go), f32 elements: SwiGLU's output
// (intermediate); also attention's output and log-sum-exp (q + heads);
// or the whole set but the layer's input.
func recomputedPerLayer(mc *model.Config, lr int64, p model.Recompute) int64 {
	_, q, _, inter, _ := dims(mc)
	switch p {
	case model.RecomputeSwiGLU:
		return inter
	case model.RecomputeSelective:
		return inter + q + int64(mc.NumHeads)
	case model.RecomputeLayer:
		return fullPerLayer(mc, lr)
	}
	return 0
}

// keptPerLayer is what the trace keeps per token and layer under p: under
// RecomputeLayer the layer's output alone (the next layer's input).
func keptPerLayer(mc *model.Config, lr int64, p model.Recompute) int64 {
	if p == model.RecomputeLayer {
		return int64(mc.HiddenSize)
	}
	return fullPerLayer(mc, lr) - recomputedPerLayer(mc, lr, p)
}

// layerFLOPs are one layer's forward and backward FLOPs per token of a
// LoRA micro-batch of sequences of seqLen tokens, and the parts the
// policies recompute: base GEMMs 2·params forward and again backward (the
// input gradient only: frozen weights get none); the LoRA terms 2·Σ
// rank·(in + out) forward, twice that backward (dy·B, dx, dB, dA);
// causal attention 4·q·(seqLen+1)/2 forward (Q·Kᵀ and P·V over the mean
// context), 2.5× that backward (scores rebuilt from the log-sum-exp, then
// dP, dV, dQ, dK); SwiGLU swigluFLOPs per intermediate element.
// Norms, RoPE and residual adds are left out (a few per element).
type layerFLOPs struct{ forward, backward, attention, swiglu float64 }

func perTokenLayerFLOPs(mc *model.Config, loraParams int64, seqLen int) layerFLOPs {
	h, q, kv, inter, _ := dims(mc)
	proj := 2 * float64(h*(q+2*kv)+q*h+3*h*inter)
	lr := 2 * float64(loraParams)
	attn := 2 * float64(q) * float64(seqLen+1)
	sw := swigluFLOPs * float64(inter)
	return layerFLOPs{forward: proj + lr + attn + sw, backward: proj + 2*lr + 2.5*attn + 2*sw, attention: attn, swiglu: sw}
}

// extra is what p adds per token and layer: the SwiGLU, attention too, or
// the whole forward.
func (f layerFLOPs) extra(p model.Recompute) float64 {
	switch p {
	case model.RecomputeSwiGLU:
		return f.swiglu
	case model.RecomputeSelective:
		return f.swiglu + f.attention
	case model.RecomputeLayer:
		return f.forward
	}
	return 0
}

// recomputeItems sizes the training phase under every policy, picks the
// policy (cfg.Recompute, or for "auto" chooseRecompute with avail), and
// inserts the chosen policy's training items at index at of e.Items.
func (e *Estimate) recomputeItems(cfg *config.Config, mc *model.Config, projs []model.Proj, longest int, seqs []trainSeq, at int, avail *Available) error {
	n := int64(max(cfg.MicroBatchTokens, longest-1))
	r := lossRows(n, seqs)
	seqLen := int(max(1, min(n, int64(longest-1))))
	loraParams := loraParamsPerLayer(mc, cfg.LoRA.Rank, projs)
	f := perTokenLayerFLOPs(mc, loraParams, seqLen)
	L, h, v := float64(mc.NumLayers), float64(mc.HiddenSize), float64(mc.VocabSize)
	e.TrainFLOPs = float64(n)*L*(f.forward+f.backward) + 4*h*v*float64(r)
	others := e.Items
	e.Recomputes = nil
	for _, p := range model.RecomputePolicies() {
		tb := trainingBytes(cfg, mc, len(projs), n, r, p)
		e.Items = append(slices.Clone(others), tb.items...)
		e.finish()
		e.Recomputes = append(e.Recomputes, RecomputeCost{Policy: p, TrainingBytes: tb.total(), Peak: e.Peak,
			ExtraFLOPs: float64(n) * L * f.extra(p), items: tb.items})
	}
	chosen, why, err := chooseRecompute(cfg.Recompute, e.Recomputes, avail)
	if err != nil {
		return err
	}
	e.Recompute, e.RecomputeWhy = chosen, why
	e.Items = slices.Concat(others[:at], e.Recomputes[chosen].items, others[at:])
	e.note("training micro-batch: %d tokens (micro_batch_tokens %d, longest sequence %d); its KV cache taken as one row per token (equal-length sequences)",
		n, cfg.MicroBatchTokens, longest)
	e.note("training LM head: %d of the micro-batch's %d rows carry loss weight (every completion token at max_tokens, prompts at the longest; shorter prompts put more rows through the head)",
		r, n)
	return nil
}

// chooseRecompute is the policy of setting (a config recompute value):
// the named one, or for "auto" the least recompute whose peak fits the
// free memory less autoHeadroom; RecomputeLayer, the least memory, when
// none does; no recompute when the free memory is unknown.
func chooseRecompute(setting string, costs []RecomputeCost, avail *Available) (model.Recompute, string, error) {
	if setting != config.RecomputeAuto {
		p, err := model.ParseRecompute(setting)
		if err != nil {
			return 0, "", config.CheckRecompute(setting)
		}
		return p, "set in the config", nil
	}
	if avail == nil || !avail.Known {
		return model.RecomputeNone, `recompute = "auto" with the free memory unknown keeps every activation; set recompute = "layer" to need the least`, nil
	}
	budget := int64(float64(avail.Bytes) * (1 - autoHeadroom))
	for _, c := range costs {
		if c.Peak <= budget {
			if c.Policy == model.RecomputeNone {
				return c.Policy, fmt.Sprintf("auto: every activation kept, the peak %s fits %s (%.0f%% of the %s free)",
					FormatBytes(c.Peak), FormatBytes(budget), 100*(1-autoHeadroom), FormatBytes(avail.Bytes)), nil
			}
			less := costs[c.Policy-1]
			return c.Policy, fmt.Sprintf("auto: the least recompute whose peak %s fits %s (%.0f%% of the %s free); recompute = %s would need %s",
				FormatBytes(c.Peak), FormatBytes(budget), 100*(1-autoHeadroom), FormatBytes(avail.Bytes), less.Policy, FormatBytes(less.Peak)), nil
		}
	}
	last := costs[len(costs)-1]
	return last.Policy, fmt.Sprintf("auto: no policy fits %s (%.0f%% of the %s free); %s needs the least, %s",
		FormatBytes(budget), 100*(1-autoHeadroom), FormatBytes(avail.Bytes), last.Policy, FormatBytes(last.Peak)), nil
}
