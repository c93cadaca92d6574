package model

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// blocks is the host side of a paged cache's pool: the block table, how
// many table entries name each block, and the blocks nobody names. A
// cache has one, and a second for its sliding-window layers (windowPool).
type blocks struct {
	table                []int32 // slots × maxBlocks; −1 where unmapped
	refs                 []int32 // per block
	free                 []int32 // unreferenced blocks, a stack
	blockSize, maxBlocks int
	tableBuf             kernels.Buffer
	dirty                bool // table changed since the last upload
	// Copies counts blocks copied on write: the first write into a block
	// that another slot also maps.
	Copies int
}

func newBlocks(slots, maxBlocks, blockSize, numBlocks int) blocks {
	b := blocks{table: make([]int32, slots*maxBlocks), refs: make([]int32, numBlocks), blockSize: blockSize, maxBlocks: maxBlocks}
	for i := range b.table {
		b.table[i] = -1
	}
	b.free = make([]int32, 0, numBlocks)
	b.reset()
	return b
}

// reset puts every block back on the free stack, the lowest on top.
func (b *blocks) reset() {
	b.free = b.free[:0]
	for i := len(b.refs) - 1; i >= 0; i-- {
		b.free = append(b.free, int32(i))
	}
}

// pages is the table as the kernels read it, uploaded first if it changed
// since the last call.
func (b *blocks) pages(be kernels.Backend) kernels.KVPages {
	if b.dirty {
		be.UploadI32(b.tableBuf, b.table)
		b.dirty = false
	}
	return kernels.KVPages{Table: b.tableBuf, BlockSize: b.blockSize, MaxBlocks: b.maxBlocks}
}

// ResetBlocks puts the pool back in a new cache's order (the lowest block
// taken first), so a cache reused for a new batch maps its blocks as a new
// one would. Every slot must have been released.
func (c *KVCache) ResetBlocks() error {
	if c.fixed {
		return nil
	}
	if len(c.free) != c.NumBlocks {
		return fmt.Errorf("KV cache: %d of %d blocks are still mapped; release every slot before reusing the cache", c.NumBlocks-len(c.free), c.NumBlocks)
	}
	c.reset()
	if w := c.window; w != nil {
		if len(w.free) != len(w.refs) {
			return fmt.Errorf("KV cache: %d of the sliding-window layers' %d blocks are still mapped; release every slot before reusing the cache", len(w.refs)-len(w.free), len(w.refs))
		}
		w.reset()
	}
	return nil
}

// FreeBlocks is how many blocks no slot maps (of the full-attention
// layers' pool, the one a sequence's length is reserved in).
func (c *KVCache) FreeBlocks() int { return len(c.free) }

// BlocksFor is how many blocks n positions take.
func (c *KVCache) BlocksFor(n int) int { return BlocksFor(n, c.BlockSize) }

// row is slot's row of the table.
func (b *blocks) row(slot int) []int32 { return b.table[slot*b.maxBlocks : (slot+1)*b.maxBlocks] }

// Fork makes slot dst share the blocks that hold positions 0..n−1 of slot
// src, as a GRPO group's rollouts share their prompt: the shared blocks
// count one more reference, and the partly filled last one is copied when
// either slot first writes past position n−1 into it. dst must map no
// blocks (a fresh or released slot) and src must map every block of its
// first n positions (CanFork); dst continues at position n, so of the
// sliding-window layers' blocks it shares only those its window there
// reaches. A model with linear-attention layers also copies src's states
// into dst, so src must have consumed exactly n positions.
func (c *KVCache) Fork(dst, src, n int) error {
	switch {
	case c.fixed:
		return fmt.Errorf("KV cache: a contiguous cache cannot share blocks (use NewPagedKVCache)")
	case dst < 0 || dst >= c.Slots || src < 0 || src >= c.Slots || dst == src:
		return fmt.Errorf("KV cache: fork of slot %d into slot %d: want two different slots in [0, %d)", src, dst, c.Slots)
	case n < 1 || n > c.MaxLen:
		return fmt.Errorf("KV cache: fork of %d positions: want 1..%d", n, c.MaxLen)
	}
	pools := c.pools()
	for _, p := range pools {
		for _, b := range p.row(dst) {
			if b >= 0 {
				return fmt.Errorf("KV cache: fork into slot %d, which still maps blocks; release it first", dst)
			}
		}
	}
	for i, p := range pools {
		if j := p.unmapped(src, c.forkFrom(i, n), n); j >= 0 {
			return fmt.Errorf("KV cache: fork of %d positions of slot %d, whose block %d%s is not mapped", n, src, j, poolName(i))
		}
	}
	for i, p := range pools {
		from, to := p.row(src), p.row(dst)
		for j := c.forkFrom(i, n) / c.BlockSize; j < c.BlocksFor(n); j++ {
			to[j] = from[j]
			p.refs[from[j]]++
		}
		p.dirty = true
	}
	c.linear.copySlot(c.backend, dst, src)
	return nil
}

// CanFork reports whether Fork(dst, src, n) finds every block it shares
// mapped in src: a sequence past position n may have returned sliding
// window blocks a fork at n still needs (windowPool.dropBehind).
func (c *KVCache) CanFork(src, n int) bool {
	if c.fixed || src < 0 || src >= c.Slots || n < 1 || n > c.MaxLen {
		return false
	}
	for i, p := range c.pools() {
		if p.unmapped(src, c.forkFrom(i, n), n) >= 0 {
			return false
		}
	}
	return true
}

// unmapped is the first block of slot's positions from..n−1 that is not
// mapped, or −1.
func (b *blocks) unmapped(slot, from, n int) int {
	r := b.row(slot)
	for j := from / b.blockSize; j < BlocksFor(n, b.blockSize); j++ {
		if r[j] < 0 {
			return j
		}
	}
	return -1
}

// Release unmaps every block of slot, returning the blocks no other slot
// maps to their pool. On a contiguous cache it does nothing: its blocks
// are mapped for the cache's life.
func (c *KVCache) Release(slot int) {
	if c.fixed || slot < 0 || slot >= c.Slots {
		return
	}
	for _, p := range c.pools() {
		p.unmap(slot, p.maxBlocks)
	}
}

// unmap unmaps slot's first n blocks, returning those no other slot maps
// to the pool; it says how many entries it cleared.
func (b *blocks) unmap(slot, n int) int {
	cleared := 0
	r := b.row(slot)
	for j, blk := range r[:n] {
		if blk < 0 {
			continue
		}
		if b.refs[blk]--; b.refs[blk] == 0 {
			b.free = append(b.free, blk)
		}
		r[j] = -1
		b.dirty = true
		cleared++
	}
	return cleared
}

// mapBatch gives every position the batch writes a block of its own in
// each pool: an unmapped block is taken from the pool and a shared one is
// copied first (copy on write). It then checks that every block a token
// reads is mapped. The sliding-window layers' pool first returns the
// blocks no window of the batch reaches (windowPool.dropBehind).
func (c *KVCache) mapBatch(b *Batch) error {
	if c.fixed {
		return nil
	}
	if w := c.window; w != nil {
		w.dropBehind(b)
	}
	for i, p := range c.pools() {
		if err := c.mapPool(i, p, b); err != nil {
			return err
		}
	}
	return nil
}

// mapPool is mapBatch over pool i.
func (c *KVCache) mapPool(i int, p *blocks, b *Batch) error {
	for k, s := range b.Slots {
		pos := int(b.Positions[k])
		e := &p.row(int(s))[pos/c.BlockSize]
		switch {
		case *e < 0:
			blk, err := c.take(i, p, int(s), pos)
			if err != nil {
				return err
			}
			*e = blk
		case p.refs[*e] > 1:
			blk, err := c.take(i, p, int(s), pos)
			if err != nil {
				return err
			}
			c.copyBlock(i, blk, *e)
			p.refs[*e]--
			*e = blk
			p.Copies++
		}
	}
	for s, r := range batchSpans(b) {
		from := c.readFrom(i, int(r[0]))
		if j := p.unmapped(int(s), from, int(r[1])+1); j >= 0 {
			return fmt.Errorf("slot %d at position %d attends to positions %d..%d%s, which were never written", s, r[1], j*c.BlockSize, (j+1)*c.BlockSize-1, poolName(i))
		}
	}
	return nil
}

// batchSpans is, per slot of the batch, its lowest and highest position.
func batchSpans(b *Batch) map[int32][2]int32 {
	spans := make(map[int32][2]int32, 8)
	for k, s := range b.Slots {
		p := b.Positions[k]
		if r, ok := spans[s]; ok {
			spans[s] = [2]int32{min(r[0], p), max(r[1], p)}
		} else {
			spans[s] = [2]int32{p, p}
		}
	}
	return spans
}

// take removes a block from pool i for position pos of slot.
func (c *KVCache) take(i int, p *blocks, slot, pos int) (int32, error) {
	if len(p.free) == 0 {
		return 0, fmt.Errorf("KV cache: all %d blocks of %d tokens%s are in use (slot %d needs one for position %d); release finished sequences or give the cache more blocks",
			len(p.refs), c.BlockSize, poolName(i), slot, pos)
	}
	blk := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	p.refs[blk] = 1
	p.dirty = true
	return blk, nil
}

// copyBlock copies block src's keys and values into block dst, every
// layer of pool i.
func (c *KVCache) copyBlock(i int, dst, src int32) {
	n := c.BlockSize * c.width
	for l := range c.K {
		if c.K[l] == nil || c.poolOf(l) != i {
			continue // a linear-attention layer (no blocks), or the other pool's
		}
		c.backend.Copy(c.K[l].Slice(int(dst)*n, n), c.K[l].Slice(int(src)*n, n))
		c.backend.Copy(c.V[l].Slice(int(dst)*n, n), c.V[l].Slice(int(src)*n, n))
	}
}
