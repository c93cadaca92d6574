package perf

import (
	"math"

	"github.com/grpo-dev/grpo/model"
)

// LinearFLOPs is the multiply-add work per token of every projection and
// the LM head (2 FLOPs per weight); the embedding is a gather and costs
// none. A mixture-of-experts layer counts its router and the
// num_experts_per_tok experts a token runs through: the active
// parameters, not the stored ones.
func LinearFLOPs(c *model.Config) float64 {
	h, i, hd := float64(c.HiddenSize), float64(c.IntermediateSize), float64(c.HeadDim)
	q, kv := float64(c.NumHeads)*hd, float64(c.NumKVHeads)*hd
	var layers float64
	for l := range c.NumLayers {
		layers += h*q + 2*h*kv + q*h
		if c.IsSparse(l) {
			// The experts read latent rows in a latent MoE, between its two
			// hidden × latent projections.
			ew, lat := float64(c.ExpertWidth()), float64(c.MoELatent())
			layers += float64(c.NumExperts)*h + float64(c.NumExpertsPerTok)*3*ew*float64(c.MoEIntermediateSize) + 2*h*lat
		} else {
			layers += 3 * h * i
		}
	}
	return 2 * (layers + float64(c.VocabSize)*h)
}

// ReadParams is how many weights one decode step of batch sequences
// reads: every dense weight, and in each sparse layer the experts any of
// the batch's tokens is routed to — E·(1 − (1 − k/E)^batch) of E on
// average under uniform routing (all of them once batch·k ≫ E), each of
// 3·width·moe_intermediate weights (width: the hidden size, or a latent
// MoE's latent size).
func ReadParams(c *model.Config, batch int) float64 {
	n := float64(c.ParamCount())
	if s := c.SparseLayers(); s > 0 {
		e, k := float64(c.NumExperts), float64(c.NumExpertsPerTok)
		per := 3 * float64(c.ExpertWidth()) * float64(c.MoEIntermediateSize)
		read := e * (1 - math.Pow(1-k/e, float64(batch)))
		n -= float64(s) * (e - read) * per
	}
	return n
}

// AttentionFLOPs is the work per token of attention over ctx cached
// positions: QKᵀ and P·V, 2·headDim FLOPs each per head and position
// read — ctx in a full layer, min(ctx, W) in a sliding-window one.
func AttentionFLOPs(c *model.Config, ctx float64) float64 {
	if c.SlidingWindows == nil {
		return 4 * float64(c.NumLayers*c.NumHeads*c.HeadDim) * ctx
	}
	var read float64
	for l := range c.NumLayers {
		read += ctx
		if w := float64(c.SlidingWindow(l)); w > 0 {
			read += min(ctx, w) - ctx
		}
	}
	return 4 * float64(c.NumHeads*c.HeadDim) * read
}

// causalAttentionFLOPs is the mean work per token of attention in a
// causal pass over n tokens: token t reads t+1 positions, (n+1)/2 on
// average, or min(t+1, W) in a sliding-window layer.
func causalAttentionFLOPs(c *model.Config, n int) float64 {
	if c.SlidingWindows == nil {
		return AttentionFLOPs(c, float64(n+1)/2)
	}
	var read float64
	for l := range c.NumLayers {
		read += meanCausalRead(n, c.SlidingWindow(l))
	}
	return 4 * float64(c.NumHeads*c.HeadDim) * read
}

// meanCausalRead is the positions token t of 0..n−1 reads, on average,
// under a window of w keys (0: none): (n+1)/2 while n ≤ w; past it the
// first w tokens read 1..w and the rest w each.
func meanCausalRead(n, w int) float64 {
	if w == 0 || n <= w {
		return float64(n+1) / 2
	}
	return (float64(w)*float64(w+1)/2 + float64(n-w)*float64(w)) / float64(n)
}

// DecodeFLOPs is one decode step's work: every token's projections, LM
// head and attention over ctx positions, and its LoRA products (2 FLOPs
// per A and B weight of a rank-rank adapter on all seven projections).
func DecodeFLOPs(c *model.Config, batch, ctx, rank int) float64 {
	return float64(batch) * (LinearFLOPs(c) + AttentionFLOPs(c, float64(ctx)) + 2*loraParams(c, rank))
}

// PrefillFLOPs is the model count per prompt token of a prefill of
// prompts of prompt tokens: causal, token t attends to t+1 positions,
// (n+1)/2 on average; the LM head runs for each sequence's last token
// only, unless allLogits asks for every row's.
func PrefillFLOPs(c *model.Config, prompt int, allLogits bool) float64 {
	lmHead := 2 * float64(c.VocabSize) * float64(c.HiddenSize) * (1 - 1/float64(prompt))
	if allLogits {
		lmHead = 0
	}
	return LinearFLOPs(c) - lmHead + causalAttentionFLOPs(c, prompt)
}

// TrainFLOPs is the model count per trained token of sequences of seqLen
// tokens: forward and input gradients of every weight (2× linear; the
// base is frozen, so no weight gradients), attention forward and a
// backward of twice its work. The rank-r LoRA products add 2·r·(in+out)
// per projection, under 1% at rank 16, and are left out.
func TrainFLOPs(c *model.Config, seqLen int) float64 {
	return 2*LinearFLOPs(c) + 3*causalAttentionFLOPs(c, seqLen)
}
