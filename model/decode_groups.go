package model

import "github.com/grpo-dev/grpo/kernels"

// loadGroups derives, at Load, which of the step's rows read a shared
// prompt (kernels.PrefixGroups over the cache's block table) and keeps
// it in the bucket's groups buffer, whose address a captured graph
// holds. Only blocks wholly written before the step count — below each
// row's position: a block a row will still write into (a prompt's partly
// filled last block) is copied on that write, so its table entry changes.
// Blocks wholly written are never written again while the rows stay
// loaded, so the groups hold for every step until the next Load. A
// bucket whose rows share nothing runs Attention as before; a bucket
// keeps a graph for each of the two (decodeBucket.graph).
func (d *Decoder) loadGroups(cache *KVCache, b *decodeBucket, slot, pos []int32) {
	written := make([]int32, len(pos))
	for i, p := range pos {
		written[i] = p - 1
	}
	groups := kernels.PrefixGroups(cache.table, cache.MaxBlocks, cache.BlockSize, slot, written)
	b.sharedRows = 0
	for t := range slot {
		if groups[t*kernels.PrefixGroupWords+1] > 1 && !d.plainAttention {
			b.sharedRows++
		}
	}
	shared := b.sharedRows > 0
	if shared {
		d.m.Backend.UploadI32(b.groups, groups)
	}
	b.shared = shared
}

// SharedRows is how many of the loaded rows read their prompt's blocks
// through a group (AttentionSharedPrefix), for tests and statistics.
func (d *Decoder) SharedRows() int {
	if d.cur == nil || !d.cur.shared {
		return 0
	}
	return d.cur.sharedRows
}

// SetSharedPrefixAttention turns the shared-prefix attention on (the
// default) or off from the next Load: off, every row reads its whole
// context itself, as before groups existed (to compare the two).
func (d *Decoder) SetSharedPrefixAttention(on bool) { d.plainAttention = !on }
