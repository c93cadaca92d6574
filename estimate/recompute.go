package estimate

import (
	"fmt"
	"slices"
	"time"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/model"
)

// RecomputeCost is what one recompute setting (model.ParseRecomputeSetting:
// a policy for every layer, or the last layers checkpointed and a policy
// for the others) costs a run: the training phase's memory and the run's
// peak under it, and the arithmetic it adds to each micro-batch.
type RecomputeCost struct {
	// Setting is the config value: "selective", "layer", "layer:12",
	// "selective+layer:9".
	Setting string `json:"setting"`
	// Policy is that of the layers not checkpointed (RecomputeLayer when
	// every layer is), Layers how many are (the last ones).
	Policy        model.Recompute `json:"policy"`
	Layers        int             `json:"checkpointed_layers"`
	TrainingBytes int64           `json:"training_bytes"`
	Peak          int64           `json:"peak_bytes"`
	// ExtraFLOPs is what the backward recomputes per micro-batch, on top
	// of the micro-batch's forward and backward (Estimate.TrainFLOPs).
	ExtraFLOPs float64 `json:"extra_flops"`
	items      []MemItem
}

// plan is a recompute setting as the estimate sizes it: the last layers
// of the model checkpointed (RecomputeLayer), the others under rest.
type plan struct {
	rest   model.Recompute // none, swiglu or selective
	layers int             // checkpointed, 0..L
}

// plans are every setting of a model of L layers: each finer policy on
// every layer and with the last 1 … L−1 layers checkpointed, then every
// layer checkpointed.
func plans(L int) []plan {
	var out []plan
	for _, rest := range []model.Recompute{model.RecomputeNone, model.RecomputeSwiGLU, model.RecomputeSelective} {
		for k := range L {
			out = append(out, plan{rest, k})
		}
	}
	return append(out, plan{model.RecomputeNone, L})
}

// parsePlan reads a config setting (model.ParseRecomputeSetting) for a
// model of L layers.
func parsePlan(setting string, L int) (plan, error) {
	p, k, err := model.ParseRecomputeSetting(setting)
	if err != nil {
		return plan{}, config.CheckRecompute(setting)
	}
	if p == model.RecomputeLayer || k >= L {
		return plan{model.RecomputeNone, L}, nil
	}
	return plan{p, k}, nil
}

// policy and checkpointed are the plan as model.Model's Recompute and
// CheckpointLayers.
func (pl plan) model(L int) (policy model.Recompute, checkpointed int) {
	if pl.layers >= L {
		return model.RecomputeLayer, 0
	}
	return pl.rest, pl.layers
}

func (pl plan) setting(L int) string { return model.RecomputeSetting(pl.model(L)) }

// keptPerToken is what the trace keeps per token over all L layers: the
// output alone of a checkpointed layer, keptPerLayer of the others.
func (pl plan) keptPerToken(mc *model.Config, lr int64) int64 {
	L, k := int64(mc.NumLayers), int64(pl.layers)
	return k*int64(mc.HiddenSize) + (L-k)*keptPerLayer(mc, lr, pl.rest)
}

// recomputedPerToken is what the largest of the layers' backward
// recomputes, per token: a checkpointed layer's, when there is one.
func (pl plan) recomputedPerToken(mc *model.Config, lr int64) int64 {
	if pl.layers > 0 {
		return recomputedPerLayer(mc, lr, model.RecomputeLayer)
	}
	return recomputedPerLayer(mc, lr, pl.rest)
}

// cacheLayers is how many layers' KV caches the trace holds: one for all
// the checkpointed layers (model/recompute.go newTrainCache).
func (pl plan) cacheLayers(L int) int {
	return L - pl.layers + min(pl.layers, 1)
}

// extraFLOPs is what the plan recomputes per token over the model.
func (pl plan) extraFLOPs(f layerFLOPs, L int) float64 {
	return float64(pl.layers)*f.extra(model.RecomputeLayer) + float64(L-pl.layers)*f.extra(pl.rest)
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
// the LoRA shrinks' Σ ranks: xMid, xOut, h1, h2, the two norms' rstd, q,
// attn, lse, gateUp, act (k and v go straight to the KV cache). The
// o_proj/down_proj output is a view of the trace's fused q/k/v GEMM
// output, unless that is narrower than hidden.
func fullPerLayer(mc *model.Config, lr int64) int64 {
	h, q, kv, inter, _ := dims(mc)
	heads, kvHeads := int64(mc.NumHeads), int64(mc.NumKVHeads)
	n := 4*h + 2 + 2*q + heads + 3*inter + lr
	if qkvWidth(mc) < h {
		n += h
	}
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

// recomputeItems sizes the training phase under every recompute setting,
// picks one (cfg.Recompute, or for "auto" chooseRecompute with avail),
// inserts its training items at index at of e.Items, and lists in
// e.Recomputes the four policies and the chosen setting.
func (e *Estimate) recomputeItems(cfg *config.Config, mc *model.Config, projs []model.Proj, longest int, seqs []trainSeq, at int, avail *Available) error {
	n := int64(max(cfg.MicroBatchTokens, longest-1))
	r := lossRows(n, seqs)
	seqLen := int(max(1, min(n, int64(longest-1))))
	f := perTokenLayerFLOPs(mc, loraParamsPerLayer(mc, cfg.LoRA.Rank, projs), seqLen)
	L, h, v := mc.NumLayers, float64(mc.HiddenSize), float64(mc.VocabSize)
	e.TrainFLOPs = float64(n)*float64(L)*(f.forward+f.backward) + 4*h*v*float64(r)
	others := e.Items
	var costs []RecomputeCost
	all := plans(L)
	for _, pl := range all {
		tb := trainingBytes(cfg, mc, len(projs), longest, seqs, n, r, pl)
		e.Items = append(slices.Clone(others), tb.items...)
		e.finish()
		p, _ := pl.model(L)
		costs = append(costs, RecomputeCost{Setting: pl.setting(L), Policy: p, Layers: pl.layers,
			TrainingBytes: tb.total(), Peak: e.Peak, ExtraFLOPs: float64(n) * pl.extraFLOPs(f, L), items: tb.items})
	}
	chosen, why, err := chooseRecompute(cfg.Recompute, L, costs, avail)
	if err != nil {
		return err
	}
	c := costs[chosen]
	e.Recompute, e.CheckpointLayers = all[chosen].model(L)
	e.RecomputeSetting, e.RecomputeWhy = c.Setting, why
	// The table: each finer policy on every layer, the chosen setting when
	// it is none of those, every layer checkpointed.
	e.Recomputes = nil
	for i, rc := range costs {
		if all[i].layers == 0 {
			e.Recomputes = append(e.Recomputes, rc)
		}
	}
	if all[chosen].layers > 0 && chosen != len(costs)-1 {
		e.Recomputes = append(e.Recomputes, c)
	}
	e.Recomputes = append(e.Recomputes, costs[len(costs)-1])
	e.Items = slices.Concat(others[:at], c.items, others[at:])
	e.note("training micro-batch: %d tokens (micro_batch_tokens %d, longest sequence %d); its KV cache taken as one row per token (equal-length sequences)",
		n, cfg.MicroBatchTokens, longest)
	e.note("training LM head: %d of the micro-batch's %d rows carry loss weight (every completion token at max_tokens, prompts at the longest; shorter prompts put more rows through the head)",
		r, n)
	return nil
}

// chooseRecompute picks among costs (plans' order, for a model of L
// layers) the one setting (a config recompute value) names; for "auto" the
// one with the least extra FLOPs whose peak fits the free memory less
// autoHeadroom (the least memory among equals), "layer" — the least
// memory — when none does, and no recompute when the free memory is
// unknown.
func chooseRecompute(setting string, L int, costs []RecomputeCost, avail *Available) (int, string, error) {
	if setting != config.RecomputeAuto {
		pl, err := parsePlan(setting, L)
		if err != nil {
			return 0, "", err
		}
		for i, c := range costs {
			if c.Setting == pl.setting(L) {
				return i, "set in the config", nil
			}
		}
		return 0, "", fmt.Errorf("recompute = %q: not among the settings sized", setting)
	}
	if avail == nil || !avail.Known {
		return 0, `recompute = "auto" with the free memory unknown keeps every activation; set recompute = "layer" to need the least`, nil
	}
	budget := int64(float64(avail.Bytes) * (1 - autoHeadroom))
	room := fmt.Sprintf("%s (%.0f%% of the %s free)", FormatBytes(budget), 100*(1-autoHeadroom), FormatBytes(avail.Bytes))
	best := -1
	for i, c := range costs {
		if c.Peak <= budget && (best < 0 || c.ExtraFLOPs < costs[best].ExtraFLOPs ||
			c.ExtraFLOPs == costs[best].ExtraFLOPs && c.Peak < costs[best].Peak) {
			best = i
		}
	}
	switch {
	case best < 0:
		last := len(costs) - 1
		return last, fmt.Sprintf("auto: no setting fits %s; %s needs the least, %s", room, costs[last].Setting, FormatBytes(costs[last].Peak)), nil
	case best == 0:
		return 0, fmt.Sprintf("auto: every activation kept, the peak %s fits %s", FormatBytes(costs[0].Peak), room), nil
	}
	return best, fmt.Sprintf("auto: the least recompute whose peak %s fits %s; without recompute the peak is %s",
		FormatBytes(costs[best].Peak), room, FormatBytes(costs[0].Peak)), nil
}

// chosenRecompute is the cost of the setting the estimate is sized for.
func (e *Estimate) chosenRecompute() (RecomputeCost, bool) {
	for _, c := range e.Recomputes {
		if c.Setting == e.RecomputeSetting {
			return c, true
		}
	}
	return RecomputeCost{}, false
}

// TrainTime is the measured step's training time (Time.Train, taken under
// the chosen setting) scaled to setting c by the micro-batch FLOPs of each:
// the time model of what recompute costs. 0 when the time was not measured.
func (e *Estimate) TrainTime(c RecomputeCost) time.Duration {
	chosen, ok := e.chosenRecompute()
	if e.Time == nil || !ok || e.TrainFLOPs <= 0 {
		return 0
	}
	return time.Duration(float64(e.Time.Train) * (e.TrainFLOPs + c.ExtraFLOPs) / (e.TrainFLOPs + chosen.ExtraFLOPs))
}
