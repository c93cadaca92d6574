package model

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// KVCache holds keys and values in a pool of blocks: per layer, K and V are
// NumBlocks × BlockSize × NumKVHeads × HeadDim. Each of Slots sequences
// maps its positions onto blocks through its row of the block table
// (kernels.KVPages), so a sequence takes blocks as it grows, returns them
// when released, and shares them with sequences forked from it (a GRPO
// group's prompt); a shared block is copied when one of them first writes
// into it. A slot is any sequence's row of the table; the sampler reuses
// slots as sequences finish.
//
// A contiguous cache (NewKVCache: scoring by Forward) is the identity
// table, one block of MaxLen rows per slot, mapped for the cache's life;
// a training trace's is one too. Both are in the trace's attention dtype
// (Model.traceAttention: bf16 for a bf16 model on a GPU, f32 otherwise). A paged cache
// (NewPagedKVCache: the sampler's) is in the backend's KV dtype
// (kernels.Description.KVCache: bf16 on a GPU, f32 on the CPU).
type KVCache struct {
	Slots, MaxLen int
	// BlockSize is the positions per block; MaxBlocks the blocks one slot
	// can map (MaxLen rounded up); NumBlocks the blocks in the pool.
	BlockSize, MaxBlocks, NumBlocks int
	K, V                            []kernels.Buffer // one per layer
	backend                         kernels.Backend
	width                           int // NumKVHeads × HeadDim: one row
	fixed                           bool
	// shared is how many trailing layers use one K (and V) buffer (the
	// checkpointed layers of a training trace, recompute.go), freed once;
	// 0 or 1: every layer owns its own.
	shared int
	blocks
	// linear holds the gated DeltaNet layers' per-slot states (nil for a
	// model without them, and for a training trace's cache, whose
	// sequences all start fresh and end with the batch — but for the
	// states of the prompts its groups share, one slot per group:
	// traceCache); those layers' K and V are nil. hybrid says the model
	// has such layers.
	linear *linearStates
	hybrid bool
	// window is the sliding-window layers' own pool (a paged cache of a
	// model with such layers: cache_window.go), whose blocks behind every
	// sliding layer's window go back to it as sequences advance; nil
	// otherwise, and every attention layer uses the blocks above.
	window *windowPool
}

// NewKVCache allocates a contiguous cache for slots sequences of up to
// maxLen tokens: slot s is block s. Its keys and values are in the
// training trace's attention dtype (traceAttention: bf16 for a bf16
// model on a GPU), so that scoring (TokenLogprobs) runs the kernels a
// train step and the sampler run, bf16 between ops included
// (forwardAttention).
func (m *Model) NewKVCache(slots, maxLen int) *KVCache {
	c := m.contiguousCache(slots, maxLen, 0)
	c.linear = m.newLinearStates(slots)
	return c
}

// contiguousCache is a cache of slots sequences of up to maxLen tokens in
// the trace's attention dtype, slot s block s for the cache's life, whose
// last shared layers use one K (and V) buffer (newTrainCache); it holds
// no linear states.
func (m *Model) contiguousCache(slots, maxLen, shared int) *KVCache {
	c := m.newCache(slots, maxLen, maxLen, slots, 0, m.traceAttention(), shared)
	c.fix(kernels.IdentityTable(slots))
	return c
}

// fix maps the cache's blocks for its life as table says: none is ever
// released, forked or copied.
func (c *KVCache) fix(table []int32) {
	copy(c.table, table)
	for b := range c.refs {
		c.refs[b] = 1
	}
	c.free = c.free[:0]
	c.fixed = true
	c.dirty = true
}

// NewPagedKVCache allocates a pool of numBlocks blocks of blockSize
// positions, shared by slots sequences of up to maxLen tokens each. Blocks
// are mapped as Forward writes positions, shared by Fork and returned by
// Release. A model with sliding-window layers gets their pool of as many
// blocks (NewPagedKVCacheWindowed sizes it smaller).
func (m *Model) NewPagedKVCache(slots, maxLen, blockSize, numBlocks int) (*KVCache, error) {
	return m.NewPagedKVCacheWindowed(slots, maxLen, blockSize, numBlocks, numBlocks)
}

// NewPagedKVCacheWindowed is NewPagedKVCache whose sliding-window layers
// keep windowBlocks blocks (Config.WindowPoolBlocks: what the sequences'
// windows and one batch's new positions take at most) instead of
// numBlocks. A model without such layers ignores windowBlocks.
func (m *Model) NewPagedKVCacheWindowed(slots, maxLen, blockSize, numBlocks, windowBlocks int) (*KVCache, error) {
	switch {
	case slots < 1 || maxLen < 1:
		return nil, fmt.Errorf("paged KV cache: %d slots of %d tokens: want at least one of each", slots, maxLen)
	case blockSize < 1:
		return nil, fmt.Errorf("paged KV cache: block size %d: want at least 1 token", blockSize)
	case numBlocks < 1:
		return nil, fmt.Errorf("paged KV cache: %d blocks: want at least 1", numBlocks)
	case m.Config.SlidingLayers() > 0 && windowBlocks < 1:
		return nil, fmt.Errorf("paged KV cache: %d blocks for the sliding-window layers: want at least 1", windowBlocks)
	}
	if m.Config.SlidingLayers() == 0 {
		windowBlocks = 0
	}
	c := m.newCache(slots, maxLen, blockSize, numBlocks, windowBlocks, m.Backend.Describe().KVCache, 0)
	c.linear = m.newLinearStates(slots)
	return c, nil
}

// newCache allocates the blocks of every layer in dt; with shared > 1 the
// last shared layers alias one buffer (KVCache.shared). With windowBlocks
// > 0 the sliding-window layers get a pool of their own of that many
// blocks (windowPool).
func (m *Model) newCache(slots, maxLen, blockSize, numBlocks, windowBlocks int, dt kernels.DType, shared int) *KVCache {
	width := m.Config.KVWidth()
	c := &KVCache{Slots: slots, MaxLen: maxLen, BlockSize: blockSize, MaxBlocks: BlocksFor(maxLen, blockSize),
		NumBlocks: numBlocks, backend: m.Backend, width: width}
	if shared > 1 {
		c.shared = shared
	}
	if windowBlocks > 0 {
		c.window = m.newWindowPool(slots, c.MaxBlocks, blockSize, windowBlocks)
	}
	for l := range m.Config.NumLayers {
		n := numBlocks * blockSize * width
		if c.windowed(l) {
			n = windowBlocks * blockSize * width
		}
		switch o := m.Config.cacheOwner(l, shared); {
		case o < 0:
			c.K, c.V = append(c.K, nil), append(c.V, nil)
		case o == l:
			c.K, c.V = append(c.K, m.Backend.Alloc(dt, n)), append(c.V, m.Backend.Alloc(dt, n))
		default:
			c.K, c.V = append(c.K, c.K[o]), append(c.V, c.V[o])
		}
	}
	c.hybrid = m.Config.LinearLayers() > 0
	c.blocks = newBlocks(slots, c.MaxBlocks, blockSize, numBlocks)
	c.tableBuf = m.Backend.Alloc(kernels.I32, len(c.table))
	c.dirty = true
	return c
}

// cacheOwner is the layer whose K and V buffers layer l uses in a cache
// whose last shared layers alias one (shared > 1: the first of them
// owns it), l itself otherwise, or -1 for a layer without keys and
// values (a DeltaNet layer).
func (c *Config) cacheOwner(l, shared int) int {
	if c.decoderLayer(l).mixer.cacheKind() != MixAttention {
		return -1
	}
	return min(l, c.NumLayers-max(shared, 1))
}

// Pages is the block table as the kernels read it, uploaded first if it
// changed since the last call.
func (c *KVCache) Pages() kernels.KVPages { return c.blocks.pages(c.backend) }

// Bytes is the cache's memory footprint: keys and values as the backend
// stores them (Description.Storage), and the block table.
func (c *KVCache) Bytes() int64 {
	var n int64
	d := c.backend.Describe()
	for _, i := range c.owned() {
		n += int64(c.K[i].Len()+c.V[i].Len()) * int64(d.Storage(c.K[i].DType()).Size())
	}
	if c.window != nil {
		n += KVTableBytes(int64(len(c.window.table)))
	}
	return n + KVTableBytes(int64(len(c.table))) + c.linear.bytes()
}

// owned lists the layers whose K and V buffers are distinct: every
// attention layer up to the first of those that share one.
func (c *KVCache) owned() []int {
	var out []int
	for i := range c.K {
		if c.K[i] != nil && i <= len(c.K)-c.shared {
			out = append(out, i)
		}
	}
	return out
}

// Free releases the cache's buffers.
func (c *KVCache) Free() {
	for _, i := range c.owned() {
		c.backend.Free(c.K[i])
		c.backend.Free(c.V[i])
	}
	if c.tableBuf != nil {
		c.backend.Free(c.tableBuf)
	}
	if c.window != nil {
		c.backend.Free(c.window.tableBuf)
		c.window = nil
	}
	c.linear.free(c.backend)
	c.K, c.V, c.tableBuf, c.linear = nil, nil, nil, nil
}

// arena tracks the scratch buffers of one call so they are freed together.
type arena struct {
	be   kernels.Backend
	bufs []kernels.Buffer
}

func (a *arena) alloc(dt kernels.DType, n int) kernels.Buffer {
	if a == nil {
		// The static decode step (decode.go) runs the layers without an
		// arena: all it uses lives in its workspace.
		panic(fmt.Sprintf("model: an op of the static decode step allocated %d × %v of scratch; give it a buffer in the decode workspace (model/decode.go newBucket)", n, dt))
	}
	b := a.be.Alloc(dt, n)
	a.bufs = append(a.bufs, b)
	return b
}

func (a *arena) free() {
	for _, b := range a.bufs {
		a.be.Free(b)
	}
	a.bufs = nil
}
