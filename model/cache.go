package model

import "github.com/grpo-dev/grpo/kernels"

// KVCache holds keys and values for Slots sequences of up to MaxLen tokens:
// per layer, K and V are Slots × MaxLen × NumKVHeads × HeadDim. A slot is
// any sequence's home; the sampler reuses slots as sequences finish.
type KVCache struct {
	Slots, MaxLen int
	K, V          []kernels.Buffer // one per layer
	backend       kernels.Backend
	// shared is how many trailing layers use one K (and V) buffer (the
	// checkpointed layers of a training trace, recompute.go), freed once;
	// 0 or 1: every layer owns its own.
	shared int
}

// NewKVCache allocates a cache for slots sequences of up to maxLen tokens.
func (m *Model) NewKVCache(slots, maxLen int) *KVCache {
	c := &KVCache{Slots: slots, MaxLen: maxLen, backend: m.Backend}
	n := slots * maxLen * m.Config.NumKVHeads * m.Config.HeadDim
	for range m.Config.NumLayers {
		c.K = append(c.K, m.Backend.Alloc(kernels.F32, n))
		c.V = append(c.V, m.Backend.Alloc(kernels.F32, n))
	}
	return c
}

// Bytes is the cache's memory footprint in f32.
func (c *KVCache) Bytes() int64 {
	var n int64
	for _, i := range c.owned() {
		n += int64(c.K[i].Len()+c.V[i].Len()) * 4
	}
	return n
}

// owned lists the layers whose K and V buffers are distinct: every layer
// up to the first of those that share one.
func (c *KVCache) owned() []int {
	var out []int
	for i := range c.K {
		if i <= len(c.K)-c.shared {
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
	c.K, c.V = nil, nil
}

// arena tracks the scratch buffers of one call so they are freed together.
type arena struct {
	be   kernels.Backend
	bufs []kernels.Buffer
}

func (a *arena) alloc(dt kernels.DType, n int) kernels.Buffer {
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
