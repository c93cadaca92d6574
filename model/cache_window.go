package model

import "github.com/grpo-dev/grpo/kernels"

// windowPool is a paged cache's second pool, for its sliding-window
// layers (Config.SlidingWindows; gpt-oss: every other layer, 128 keys).
// A query at position p of such a layer reads keys p−W+1..p only, so once
// a sequence's batch starts past a block's last position by at least the
// largest window, no sliding layer of that sequence reads the block
// again: dropBehind returns it to this pool, while the full-attention
// layers keep theirs in the other. A sequence then holds at most
// BlocksFor(W−1)+1 of these blocks between batches, whatever its length.
// Fork, copy on write and Release work on each pool as on one; blocks
// shared by a group's rollouts go back once every one of them has
// dropped (or released) its reference.
type windowPool struct {
	blocks
	// span is the largest sliding window: the keys behind a position some
	// sliding layer reads.
	span int
	// slides says, per layer, that the layer keeps its K and V here.
	slides []bool
	// dropped counts the table entries dropBehind cleared.
	dropped int
}

// newWindowPool makes the host side of the sliding layers' pool of
// numBlocks blocks, its table on the backend.
func (m *Model) newWindowPool(slots, maxBlocks, blockSize, numBlocks int) *windowPool {
	c := m.Config
	w := &windowPool{blocks: newBlocks(slots, maxBlocks, blockSize, numBlocks), slides: make([]bool, c.NumLayers)}
	for l := range c.NumLayers {
		if c.decoderLayer(l).mixer.cacheKind() == MixAttention && c.SlidingWindow(l) > 0 {
			w.slides[l] = true
			w.span = max(w.span, c.SlidingWindow(l))
		}
	}
	w.tableBuf = m.Backend.Alloc(kernels.I32, len(w.table))
	w.dirty = true
	return w
}

// dropBehind unmaps, for each slot of the batch, the blocks wholly before
// the window of its lowest position: no query of this batch or a later
// one (sequences only move forward) reads them. Blocks another slot
// still maps stay mapped there.
func (w *windowPool) dropBehind(b *Batch) {
	for s, r := range batchSpans(b) {
		if first := int(r[0]) - w.span + 1; first >= w.blockSize {
			w.dropped += w.unmap(int(s), first/w.blockSize)
		}
	}
}

// windowed says that layer l keeps its K and V in the sliding pool.
func (c *KVCache) windowed(l int) bool { return c.window != nil && c.window.slides[l] }

// poolOf is the pool layer l's blocks are in: 0 the full layers', 1 the
// sliding layers'.
func (c *KVCache) poolOf(l int) int {
	if c.windowed(l) {
		return 1
	}
	return 0
}

// pools lists the cache's pools in poolOf's order.
func (c *KVCache) pools() []*blocks {
	if c.window == nil {
		return []*blocks{&c.blocks}
	}
	return []*blocks{&c.blocks, &c.window.blocks}
}

// poolName tells the sliding pool apart in messages.
func poolName(i int) string {
	if i == 1 {
		return " (of the sliding-window layers)"
	}
	return ""
}

// readFrom is the first position a batch whose lowest position of a slot
// is pmin reads in pool i.
func (c *KVCache) readFrom(i, pmin int) int {
	if i == 1 {
		return max(0, pmin-c.window.span+1)
	}
	return 0
}

// forkFrom is the first position a fork of n positions shares in pool i:
// the sequence forked continues at n.
func (c *KVCache) forkFrom(i, n int) int { return c.readFrom(i, n) }

// pagesFor is the block table layer l reads, of the two idx holds.
func (idx *batchIndex) pagesFor(cache *KVCache, l int) kernels.KVPages {
	if cache.windowed(l) {
		return idx.windowPages
	}
	return idx.pages
}

// windowPages is the sliding layers' block table as the kernels read it
// (Pages when the cache has no sliding pool).
func (c *KVCache) windowPages() kernels.KVPages {
	if c.window == nil {
		return c.Pages()
	}
	return c.window.pages(c.backend)
}

// WindowPoolStats describes a cache's sliding-window pool.
type WindowPoolStats struct {
	// Blocks is the pool's size (0: the cache has none), Free the blocks
	// no slot maps, Dropped the table entries returned behind a window.
	Blocks, Free, Dropped int
}

// WindowPool is the sliding-window layers' pool's counts.
func (c *KVCache) WindowPool() WindowPoolStats {
	if c.window == nil {
		return WindowPoolStats{}
	}
	return WindowPoolStats{Blocks: len(c.window.refs), Free: len(c.window.free), Dropped: c.window.dropped}
}

// WindowCopies is the blocks of the sliding pool copied on write.
func (c *KVCache) WindowCopies() int {
	if c.window == nil {
		return 0
	}
	return c.window.Copies
}
