package model

import "github.com/grpo-dev/grpo/kernels"

// The sizes newCache allocates, for callers that size a cache before (or
// instead of) allocating one: the estimate's KV plans, the trainer's pool,
// the bench's and the performance model's bytes per decode step.

// PagedKVDType is what a paged cache (NewPagedKVCache: the sampler's)
// stores each key and value element as on a backend described by d: its
// KV dtype (bf16 on a GPU, f32 on the CPU) as the backend stores it.
func PagedKVDType(d kernels.Description) kernels.DType { return d.Storage(d.KVCache) }

// KVWidth is the elements of one cached key (or value) row of one layer:
// NumKVHeads × HeadDim.
func (c *Config) KVWidth() int { return c.NumKVHeads * c.HeadDim }

// KVLayerBytes is what one position takes in one layer's cache: its key
// and value rows, in dt.
func (c *Config) KVLayerBytes(dt kernels.DType) int64 {
	return 2 * int64(c.KVWidth()) * int64(dt.Size())
}

// KVPositionBytes is what one position takes across every attention
// layer's cache (linear-attention layers keep a state per sequence
// instead: LinearStateBytes).
func (c *Config) KVPositionBytes(dt kernels.DType) int64 {
	return int64(c.AttentionLayers()) * c.KVLayerBytes(dt)
}

// LinearStateBytes is what one sequence's state takes across every gated
// DeltaNet layer (newLinearStates: f32 conv and recurrent states), 0 for
// a model without such layers.
func (c *Config) LinearStateBytes() int64 {
	return int64(c.LinearLayers()) * int64(c.ConvStateWidth()+c.RecurrentStateWidth()) * int64(kernels.F32.Size())
}

// DeltaNetActWidth is the f32 elements per token of a DeltaNet token
// mixer's activations in a forward (deltaNetActSpecs): in_proj_qkv's and
// the conv's outputs, in_proj_z's and the delta rule's, and the four
// per-head vectors a, b, g and beta; 0 without DeltaNet layers.
func (c *Config) DeltaNetActWidth() int {
	if c.LinearLayers() == 0 {
		return 0
	}
	return 2*c.LinearConvDim() + 2*c.LinearValueDim() + 4*c.LinearNumValueHeads
}

// KVBlockBytes is one block of blockSize positions across every layer.
func (c *Config) KVBlockBytes(blockSize int, dt kernels.DType) int64 {
	return int64(blockSize) * c.KVPositionBytes(dt)
}

// KVTableBytes is a block table of entries int32s (slots × blocks a slot
// can map; one per slot for a contiguous cache).
func KVTableBytes(entries int64) int64 { return entries * int64(kernels.I32.Size()) }

// BlocksFor is how many blocks of blockSize positions n positions take.
func BlocksFor(n, blockSize int) int { return (n + blockSize - 1) / blockSize }
