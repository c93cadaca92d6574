package model

import "github.com/grpo-dev/grpo/kernels"

// ForwardSizes is what Forward allocates for a batch, summed from the
// lists it allocates from, for the memory estimate's sampling phase.
type ForwardSizes struct {
	// Acts is the batch's token, slot and position indices, the embedded
	// input and the inference set every layer shares (inferenceActs: a
	// DeltaNet layer's and the output gate's too, and their adapters'
	// x·Aᵀ at the largest rank), less a sparse layer's (MoE).
	Acts int64
	// LoRA is each layer's own x·Aᵀ of its attention's and dense MLP's
	// adapted projections (inferenceLoRASpecs), every layer's kept until
	// the forward ends.
	LoRA int64
	// MoE is a sparse layer's inference set (its experts' adapters' and
	// the router's x·Aᵀ, its shared expert's) and every sparse layer's
	// experts buffer; 0 for a dense model.
	MoE int64
	// Head is what the rows of logits take: the final norm's output (and
	// its bf16 cast), the rows' indices, the logits, and, in a model with
	// DeltaNet layers, one linear-attention run per row (a sequence each).
	Head int64
}

// ForwardBytes sizes Forward over n tokens whose r logits rows are
// gathered (not every token in order), each row a sequence of its own,
// under the adapter ad; casts is whether the layers write bf16 casts of
// their GEMMs' inputs (bf16 weights on a backend whose GEMMs round their
// input to bf16); attn is the dtype of its attention (TraceAttentionDType
// of the backend and weights: the sampler's paged cache is in the
// backend's KV dtype), in which Forward keeps a bf16 model's activations
// between ops (forwardAttention).
func (c *Config) ForwardBytes(n, r int, ad AdapterShape, casts bool, attn kernels.DType) ForwardSizes {
	var idx batchIndex
	var x, hF, hFb, rows, logits, routing kernels.Buffer
	var s layerActs
	acts, moe := c.inferenceActSpecs(&s, n, &ad, casts, attn)
	acts = append(acts, indexSpecs(&idx, n)...)
	acts = append(acts, c.embedSpecs(&x, n)...)
	var lora bufSpecs
	for l := range c.NumLayers {
		lora = append(lora, c.inferenceLoRASpecs(&s, l, n, &ad)...)
		if c.decoderLayer(l).channel.sparse() {
			moe = append(moe, c.routingSpec(&routing, n))
		}
	}
	head := append(c.forwardHeadSpecs(&hF, &hFb, &rows, r, true, casts), c.logitsSpecs(&logits, r)...)
	if c.LinearLayers() > 0 {
		head = append(head, runsSpec(&idx.runs, r))
	}
	return ForwardSizes{Acts: acts.bytes(), LoRA: lora.bytes(), MoE: moe.bytes(), Head: head.bytes()}
}
