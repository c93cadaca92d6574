package model

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// blocks is the host side of a paged cache: the block table, how many
// table entries name each block, and the blocks nobody names.
type blocks struct {
	table    []int32 // slots × maxBlocks; −1 where unmapped
	refs     []int32 // per block
	free     []int32 // unreferenced blocks, a stack
	tableBuf kernels.Buffer
	dirty    bool // table changed since the last upload
	// Copies counts blocks copied on write: the first write into a block
	// that another slot also maps.
	Copies int
}

func newBlocks(slots, maxBlocks, numBlocks int) blocks {
	b := blocks{table: make([]int32, slots*maxBlocks), refs: make([]int32, numBlocks)}
	for i := range b.table {
		b.table[i] = -1
	}
	for i := numBlocks - 1; i >= 0; i-- {
		b.free = append(b.free, int32(i))
	}
	return b
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
	c.free = c.free[:0]
	for i := c.NumBlocks - 1; i >= 0; i-- {
		c.free = append(c.free, int32(i))
	}
	return nil
}

// FreeBlocks is how many blocks no slot maps.
func (c *KVCache) FreeBlocks() int { return len(c.free) }

// BlocksFor is how many blocks n positions take.
func (c *KVCache) BlocksFor(n int) int { return BlocksFor(n, c.BlockSize) }

// row is slot's row of the table.
func (c *KVCache) row(slot int) []int32 { return c.table[slot*c.MaxBlocks : (slot+1)*c.MaxBlocks] }

// Fork makes slot dst share the blocks that hold positions 0..n−1 of slot
// src, as a GRPO group's rollouts share their prompt: the shared blocks
// count one more reference, and the partly filled last one is copied when
// either slot first writes past position n−1 into it. dst must map no
// blocks (a fresh or released slot) and src must map every block of its
// first n positions. A model with linear-attention layers also copies
// src's states into dst, so src must have consumed exactly n positions.
func (c *KVCache) Fork(dst, src, n int) error {
	switch {
	case c.fixed:
		return fmt.Errorf("KV cache: a contiguous cache cannot share blocks (use NewPagedKVCache)")
	case dst < 0 || dst >= c.Slots || src < 0 || src >= c.Slots || dst == src:
		return fmt.Errorf("KV cache: fork of slot %d into slot %d: want two different slots in [0, %d)", src, dst, c.Slots)
	case n < 1 || n > c.MaxLen:
		return fmt.Errorf("KV cache: fork of %d positions: want 1..%d", n, c.MaxLen)
	}
	for _, b := range c.row(dst) {
		if b >= 0 {
			return fmt.Errorf("KV cache: fork into slot %d, which still maps blocks; release it first", dst)
		}
	}
	from, to := c.row(src), c.row(dst)
	for j := range c.BlocksFor(n) {
		if from[j] < 0 {
			return fmt.Errorf("KV cache: fork of %d positions of slot %d, whose block %d is not mapped", n, src, j)
		}
	}
	for j := range c.BlocksFor(n) {
		to[j] = from[j]
		c.refs[from[j]]++
	}
	c.dirty = true
	c.linear.copySlot(c.backend, dst, src)
	return nil
}

// Release unmaps every block of slot, returning the blocks no other slot
// maps to the pool. On a contiguous cache it does nothing: its blocks are
// mapped for the cache's life.
func (c *KVCache) Release(slot int) {
	if c.fixed || slot < 0 || slot >= c.Slots {
		return
	}
	r := c.row(slot)
	for j, b := range r {
		if b < 0 {
			continue
		}
		if c.refs[b]--; c.refs[b] == 0 {
			c.free = append(c.free, b)
		}
		r[j] = -1
		c.dirty = true
	}
}

// mapBatch gives every position the batch writes a block of its own:
// an unmapped block is taken from the pool and a shared one is copied
// first (copy on write). It then checks that every block a token reads
// is mapped.
func (c *KVCache) mapBatch(b *Batch) error {
	if c.fixed {
		return nil
	}
	for i, s := range b.Slots {
		p := int(b.Positions[i])
		e := &c.row(int(s))[p/c.BlockSize]
		switch {
		case *e < 0:
			blk, err := c.take(int(s), p)
			if err != nil {
				return err
			}
			*e = blk
		case c.refs[*e] > 1:
			blk, err := c.take(int(s), p)
			if err != nil {
				return err
			}
			c.copyBlock(blk, *e)
			c.refs[*e]--
			*e = blk
			c.Copies++
		}
	}
	last := make(map[int32]int32, 8)
	for i, s := range b.Slots {
		if p, ok := last[s]; !ok || b.Positions[i] > p {
			last[s] = b.Positions[i]
		}
	}
	for s, p := range last {
		for j, blk := range c.row(int(s))[:int(p)/c.BlockSize+1] {
			if blk < 0 {
				return fmt.Errorf("slot %d at position %d attends to positions %d..%d, which were never written", s, p, j*c.BlockSize, (j+1)*c.BlockSize-1)
			}
		}
	}
	return nil
}

// take removes a block from the pool for position pos of slot.
func (c *KVCache) take(slot, pos int) (int32, error) {
	if len(c.free) == 0 {
		return 0, fmt.Errorf("KV cache: all %d blocks of %d tokens are in use (slot %d needs one for position %d); release finished sequences or give the cache more blocks",
			c.NumBlocks, c.BlockSize, slot, pos)
	}
	blk := c.free[len(c.free)-1]
	c.free = c.free[:len(c.free)-1]
	c.refs[blk] = 1
	c.dirty = true
	return blk, nil
}

// copyBlock copies block src's keys and values into block dst, every layer.
func (c *KVCache) copyBlock(dst, src int32) {
	n := c.BlockSize * c.width
	for l := range c.K {
		if c.K[l] == nil {
			continue // a linear-attention layer: no blocks
		}
		c.backend.Copy(c.K[l].Slice(int(dst)*n, n), c.K[l].Slice(int(src)*n, n))
		c.backend.Copy(c.V[l].Slice(int(dst)*n, n), c.V[l].Slice(int(src)*n, n))
	}
}
