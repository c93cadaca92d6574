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

// policy is layer l's policy under the plan, of a model of L layers
// (model.Model's layerRecompute: the last pl.layers checkpointed).
func (pl plan) policy(l, L int) model.Recompute {
	if l >= L-pl.layers {
		return model.RecomputeLayer
	}
	return pl.rest
}

// layer is layer l of a trace of n tokens under the plan, as model
// allocates it.
func (pl plan) layer(mc *model.Config, ad adapterShape, n int64, l int) model.TrainingLayer {
	return mc.TrainingLayerBytes(l, int(n), ad.m, pl.policy(l, mc.NumLayers), ad.replay, ad.attn)
}

// keptBytes is what the trace of n tokens keeps of its layers under the
// plan: each layer's kept set, and the sparse layers' shared forward
// scratch.
func (pl plan) keptBytes(mc *model.Config, ad adapterShape, n int64) int64 {
	b := mc.MoEScratchBytes(int(n), ad.attn)
	for l := range mc.NumLayers {
		b += pl.layer(mc, ad, n, l).Kept
	}
	return b
}

// recomputedBytes is what layer l's backward recomputes under the plan.
func (pl plan) recomputedBytes(mc *model.Config, ad adapterShape, n int64, l int) int64 {
	return pl.layer(mc, ad, n, l).Rerun
}

// forwardPeakBytes is the most the layers of a forward of n tokens hold at
// once: what is allocated before the first (the shared MoE scratch and
// every sparse layer's routing), the sets the layers so far keep, and one
// layer's forward scratch (what it recomputes, or a checkpointed layer's
// whole set but what the trace keeps of it).
func (pl plan) forwardPeakBytes(mc *model.Config, ad adapterShape, n int64) int64 {
	upfront := mc.MoEScratchBytes(int(n), ad.attn)
	var kept, peak int64
	for l := range mc.NumLayers {
		lb := pl.layer(mc, ad, n, l)
		upfront += lb.Routing
		kept += lb.Kept - lb.Routing
		peak = max(peak, kept+lb.Forward)
	}
	return upfront + peak
}

// cacheLayers is how many layers' KV caches the trace of a model of
// shape mc holds under the plan (model.Config.TraceCacheLayers).
func (pl plan) cacheLayers(mc *model.Config) int { return mc.TraceCacheLayers(pl.layers) }

// extraFLOPs is what the plan recomputes per token over the model, fs
// each layer's FLOPs.
func (pl plan) extraFLOPs(fs []layerFLOPs) float64 {
	var f float64
	for l, lf := range fs {
		f += lf.extra(pl.policy(l, len(fs)))
	}
	return f
}

// autoHeadroom is the share of the free memory recompute = "auto" leaves
// unplanned: allocator rounding and fragmentation, the CUDA context and
// cuBLAS workspaces are not itemised, and a policy chosen to the last byte
// would fail its first micro-batch instead of running a little slower.
const autoHeadroom = 0.05

// swigluFLOPs counts SwiGLU's silu(g)·u per element: exp, add, divide and
// two multiplies.
const swigluFLOPs = 5

// layerFLOPs are one layer's forward and backward FLOPs per token of a
// LoRA micro-batch of sequences of seqLen tokens, and the parts the
// policies recompute: base GEMMs 2·params forward and again backward (the
// input gradient only: frozen weights get none); the LoRA terms 2·Σ
// rank·(in + out) forward, twice that backward (dy·B, dx, dB, dA);
// causal attention 4·q·(seqLen+1)/2 forward (Q·Kᵀ and P·V over the mean
// context), 2.5× that backward (scores rebuilt from the log-sum-exp, then
// dP, dV, dQ, dK); SwiGLU swigluFLOPs per intermediate element.
// Norms, RoPE and residual adds are left out (a few per element).
//
// A sparse layer's MLP is its router (hidden × experts) and k experts per
// token, their adapters counted per expert a token runs; its experts'
// SwiGLU is recomputed by every backward (model/moe.go moeBackward), so
// the swiglu policy adds nothing there (swiglu 0).
type layerFLOPs struct{ forward, backward, attention, swiglu float64 }

// perTokenLayerFLOPs is a dense layer's FLOPs, loraParams its adapters'
// Σ rank·(in + out).
func perTokenLayerFLOPs(mc *model.Config, loraParams int64, seqLen int) layerFLOPs {
	h, q, kv, inter, _ := dims(mc)
	proj := 2 * float64(h*(q+2*kv)+q*h+3*h*inter)
	lr := 2 * float64(loraParams)
	attn := 2 * float64(q) * float64(seqLen+1)
	sw := swigluFLOPs * float64(inter)
	return layerFLOPs{forward: proj + lr + attn + sw, backward: proj + 2*lr + 2.5*attn + 2*sw, attention: attn, swiglu: sw}
}

// modelLayerFLOPs is every layer's FLOPs per token under an adapter of
// rank on projs (and the routers).
func modelLayerFLOPs(mc *model.Config, rank int, projs []model.Proj, routers bool, seqLen int) []layerFLOPs {
	h, q, kv, _, _ := dims(mc)
	k, ne, mi := moeDims(mc)
	out := make([]layerFLOPs, mc.NumLayers)
	for l := range out {
		var dense, experts int64 // adapters' Σ rank·(in + out): dense projections, one expert's
		for _, p := range projs {
			if !mc.HasProj(l, p) {
				continue
			}
			in, o := mc.Dims(p)
			if mc.IsSparse(l) && p.IsMLP() {
				in, o = mc.ExpertDims(p)
				experts += int64(rank) * int64(in+o)
				continue
			}
			dense += int64(rank) * int64(in+o)
		}
		if !mc.IsSparse(l) {
			out[l] = perTokenLayerFLOPs(mc, dense, seqLen)
			continue
		}
		if routers {
			dense += int64(rank) * (h + ne)
		}
		ew, lat := int64(mc.ExpertWidth()), int64(mc.MoELatent()) // a latent MoE's experts read latent rows
		proj := 2 * float64(h*(q+2*kv)+q*h+h*ne+k*3*ew*mi+2*h*lat)
		lr := 2 * float64(dense+k*experts)
		attn := 2 * float64(q) * float64(seqLen+1)
		sw := swigluFLOPs * float64(k*mi)
		out[l] = layerFLOPs{forward: proj + lr + attn + sw, backward: proj + 2*lr + 2.5*attn + 3*sw, attention: attn}
	}
	return out
}

func moeDims(mc *model.Config) (k, experts, mi int64) {
	return int64(mc.NumExpertsPerTok), int64(mc.NumExperts), int64(mc.MoEIntermediateSize)
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
func (e *Estimate) recomputeItems(cfg *config.Config, mc *model.Config, projs []model.Proj, ad adapterShape, longest int, seqs []trainSeq, stepTrained int64, at int, avail *Available) error {
	n := int64(max(cfg.MicroBatchTokens, longest-1))
	r := lossRows(n, seqs)
	seqLen := int(max(1, min(n, int64(longest-1))))
	fs := modelLayerFLOPs(mc, cfg.LoRA.Rank, projs, ad.m.TrainsRouter(), seqLen)
	L, h, v := mc.NumLayers, float64(mc.HiddenSize), float64(mc.VocabSize)
	e.TrainFLOPs = 4 * h * v * float64(r)
	for _, f := range fs {
		e.TrainFLOPs += float64(n) * (f.forward + f.backward)
	}
	others := e.Items
	var costs []RecomputeCost
	all := plans(L)
	for _, pl := range all {
		tb := trainingBytes(cfg, mc, ad, longest, seqs, n, r, stepTrained, pl, e.casts, e.ep)
		e.Items = append(slices.Clone(others), tb.items...)
		e.finish()
		p, _ := pl.model(L)
		costs = append(costs, RecomputeCost{Setting: pl.setting(L), Policy: p, Layers: pl.layers,
			TrainingBytes: tb.total(), Peak: e.Peak, ExtraFLOPs: float64(n) * pl.extraFLOPs(fs), items: tb.items})
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
	if s := mc.SparseLayers(); s > 0 {
		k := int64(mc.NumExpertsPerTok)
		none, all := plan{model.RecomputeNone, 0}, plan{model.RecomputeNone, L}
		var moe, checkpoint int64
		for l := range L {
			if mc.IsSparse(l) {
				moe += none.layer(mc, ad, n, l).Experts
				checkpoint = all.layer(mc, ad, n, l).Experts
			}
		}
		e.note("without recompute, of the trace, %s is the %d sparse layers' expert activations and grouping (%d permuted rows each: %d tokens × %d experts) and %s their shared gate/up GEMM output; a checkpointed sparse layer keeps %s of its (its routing, which the rerun replays, and with a router adapter the router's logits)",
			FormatBytes(moe), s, n*k, n, k, FormatBytes(mc.MoEScratchBytes(int(n), ad.attn)), FormatBytes(checkpoint))
	}
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
	case best < 0 && costs[len(costs)-1].Peak <= avail.Bytes:
		// Within the free memory but not the headroom: the verdict will
		// say the run fits, so this line must not say nothing does.
		last := len(costs) - 1
		return last, fmt.Sprintf("auto: %s needs the least, %s: within the %s free, but above the %s (%.0f%%) auto aims for", costs[last].Setting, FormatBytes(costs[last].Peak), FormatBytes(avail.Bytes), FormatBytes(budget), 100*(1-autoHeadroom)), nil
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
