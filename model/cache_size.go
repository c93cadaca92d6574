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

// KVPositionBytes is what one position takes across every layer's cache.
func (c *Config) KVPositionBytes(dt kernels.DType) int64 {
	return int64(c.NumLayers) * c.KVLayerBytes(dt)
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
