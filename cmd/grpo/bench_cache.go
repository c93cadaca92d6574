package main

import (
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/sampler"
)

// benchCache is the KV cache the bench prefills and decodes over, sized as
// the sampler sizes its own (sampler.New with Blocks and BlockSize left
// at 0): paged, in the backend's KV dtype, blocks of
// sampler.DefaultBlockSize positions, enough blocks for every slot's
// maxLen. Timing the contiguous f32 cache training uses would time other
// attention and KV-write kernels than generation runs, over twice the
// bytes on a GPU.
func benchCache(m *model.Model, slots, maxLen int) (*model.KVCache, error) {
	bs := sampler.DefaultBlockSize
	return m.NewPagedKVCache(slots, maxLen, bs, slots*((maxLen+bs-1)/bs))
}

// kvElemBytes is the bytes one key or value element takes in the
// sampler's cache on be (2 for bf16 on cuda and emu, 4 on the cpu).
func kvElemBytes(be kernels.Backend) int {
	d := be.Describe()
	return d.Storage(d.KVCache).Size()
}

// kvPositionBytes is the keys and values one cached position holds
// across every layer: K and V rows of NumKVHeads·HeadDim elements of
// elemBytes each.
func kvPositionBytes(c *model.Config, elemBytes int) int64 {
	return 2 * int64(c.NumLayers) * int64(c.NumKVHeads*c.HeadDim) * int64(elemBytes)
}
