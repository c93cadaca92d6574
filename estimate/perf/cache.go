package perf

import (
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/sampler"
)

// DecodeCache is the KV cache the bench and the model decode over, sized
// as the sampler sizes its own (sampler.New with Blocks and BlockSize
// left at 0): paged, in the backend's KV dtype, blocks of
// sampler.DefaultBlockSize positions, enough blocks for every slot's
// maxLen. Timing the contiguous cache that training and scoring use
// would time other attention and KV-write kernels than generation runs.
func DecodeCache(m *model.Model, slots, maxLen int) (*model.KVCache, error) {
	bs := sampler.DefaultBlockSize
	return m.NewPagedKVCache(slots, maxLen, bs, slots*model.BlocksFor(maxLen, bs))
}

// KVDType is the dtype one key or value element takes in the sampler's
// cache on be (bf16 on cuda and emu, f32 on the cpu).
func KVDType(be kernels.Backend) kernels.DType { return model.PagedKVDType(be.Describe()) }
