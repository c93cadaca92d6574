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

// SlidingLayers is how many attention layers have a sliding window: in a
// paged cache they keep their blocks in a pool of their own (windowPool).
func (c *Config) SlidingLayers() int {
	n := 0
	for l := range c.NumLayers {
		if c.SlidingWindow(l) > 0 && c.decoderLayer(l).mixer.cacheKind() == MixAttention {
			n++
		}
	}
	return n
}

// LargestWindow is the largest sliding window of any layer, 0 for none.
func (c *Config) LargestWindow() int {
	w := 0
	for l := range c.NumLayers {
		if c.decoderLayer(l).mixer.cacheKind() == MixAttention {
			w = max(w, c.SlidingWindow(l))
		}
	}
	return w
}

// WindowSeqBlocks is the most blocks of blockSize positions one sequence
// of up to maxLen positions maps in the sliding pool between batches:
// those its window reaches, W−1 positions before its next one and that
// one (windowPool.dropBehind), or all of its own if fewer.
func (c *Config) WindowSeqBlocks(maxLen, blockSize int) int {
	return min(BlocksFor(maxLen, blockSize), BlocksFor(c.LargestWindow()-1, blockSize)+1)
}

// WindowPoolBlocks is the sliding pool that slots sequences of up to
// maxLen positions never outgrow when each batch holds at most
// batchTokens positions and each sequence's batches follow one another
// (a sequence that ran a batch of several positions runs again before it
// idles; the sampler's do): every slot's window (WindowSeqBlocks), and
// one batch's new positions beyond its slots' windows — BlocksFor of its
// positions plus a partly filled block per slot. Never more than every
// slot's maxLen positions; 0 for a model without sliding layers.
func (c *Config) WindowPoolBlocks(slots, maxLen, blockSize, batchTokens int) int {
	if c.SlidingLayers() == 0 {
		return 0
	}
	all := slots * BlocksFor(maxLen, blockSize)
	return min(all, slots*c.WindowSeqBlocks(maxLen, blockSize)+BlocksFor(batchTokens, blockSize)+min(slots, batchTokens))
}

// KVWindowBlockBytes is one block of blockSize positions across the
// sliding layers of a cache that keeps them apart (KVBlockBytes less it
// is the full layers' block).
func (c *Config) KVWindowBlockBytes(blockSize int, dt kernels.DType) int64 {
	return int64(blockSize) * int64(c.SlidingLayers()) * c.KVLayerBytes(dt)
}

// KVContextBytes is what a token at context ctx reads of every attention
// layer's cache: ctx positions of a full layer, min(ctx, W) of a layer
// with a sliding window of W keys.
func (c *Config) KVContextBytes(dt kernels.DType, ctx float64) float64 {
	if c.SlidingLayers() == 0 {
		return float64(c.KVPositionBytes(dt)) * ctx
	}
	return float64(c.KVPositionBytes(dt)-c.KVWindowBlockBytes(1, dt))*ctx + c.KVWindowContextBytes(dt, ctx)
}

// KVWindowContextBytes is KVContextBytes' part of the sliding-window
// layers: min(ctx, W) positions of each.
func (c *Config) KVWindowContextBytes(dt kernels.DType, ctx float64) float64 {
	var n float64
	for l := range c.NumLayers {
		if w := c.SlidingWindow(l); w > 0 && c.decoderLayer(l).mixer.cacheKind() == MixAttention {
			n += float64(c.KVLayerBytes(dt)) * min(ctx, float64(w))
		}
	}
	return n
}
