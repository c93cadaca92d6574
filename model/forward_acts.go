package model

import "github.com/grpo-dev/grpo/kernels"

// forwardAttention decides, in this one place, the dtype of Forward's
// attention q and of the activations between its layers' ops: BF16 when
// the training trace's attention would be (traceAttention: bf16 weights
// on a GPU backend) and cache holds its keys and values in bf16 (the
// sampler's paged cache and a scoring cache, NewKVCache, are so then;
// a bf16 q needs bf16 caches beside it). Every layer then being a
// bf16 layer (allBF16Layers), the inference set keeps those activations
// in bf16 (inferenceBF16) for the reasons the trace does (trace_acts.go):
// every GEMM rounds its input to bf16 anyway, and attention runs on the
// tensor-core kernels for any batch, prefill or one token per sequence.
// The static decode step keeps its f32 workspace (Decoder.newBucket).
func (m *Model) forwardAttention(cache *KVCache) kernels.DType {
	return m.forwardAttentionOver(cache.kvDType())
}

// forwardAttentionOver is forwardAttention over a cache whose keys and
// values are in kv.
func (m *Model) forwardAttentionOver(kv kernels.DType) kernels.DType {
	if kv != kernels.BF16 {
		return kernels.F32
	}
	return m.traceAttention()
}

// pagedForwardActs is the dtype of a Forward's activations between ops
// over the sampler's paged cache (NewPagedKVCache: the backend's KV
// dtype): BF16 when every layer is then a bf16 layer (inferenceBF16).
// A sharded model's idle rank (ForwardIdle) exchanges rows in it, as the
// ranks whose prefill it serves do.
func (m *Model) pagedForwardActs() kernels.DType {
	if m.Config.allBF16Layers(m.forwardAttentionOver(m.Backend.Describe().KVCache)) {
		return kernels.BF16
	}
	return kernels.F32
}

// kvDType is the dtype of the cache's keys and values (F32 for a cache
// without attention layers).
func (c *KVCache) kvDType() kernels.DType {
	for _, k := range c.K {
		if k != nil {
			return k.DType()
		}
	}
	return kernels.F32
}

// inferenceBF16 rewrites the inference set's specs (acts) for a forward
// whose attention is in attn: when every layer is a bf16 layer, the
// fused q/k/v and gate/up output, the blocks' output o, attention's q and
// output (and the output gate) take dtype BF16, and the norm's and
// SwiGLU's outputs become their bf16 copies only (bf16Layer's lists of
// every layer, whose kinds share the one set, with the inference set's
// own fused and q). The residual stream, the LoRA x·Aᵀ and the head stay
// f32. Otherwise acts is returned as it is.
func (c *Config) inferenceBF16(acts bufSpecs, s *layerActs, attn kernels.DType) bufSpecs {
	if !c.allBF16Layers(attn) {
		return acts
	}
	all := bf16Acts{bufs: []*kernels.Buffer{&s.fused, &s.q}}
	for l := range c.NumLayers {
		t, _ := c.bf16Layer(l, attn, s, &layerGrads{})
		all.bufs, all.swaps = append(all.bufs, t.bufs...), append(all.swaps, t.swaps...)
	}
	return acts.inBF16(all)
}
