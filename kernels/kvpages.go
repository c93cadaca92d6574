package kernels

import "fmt"

// KVPages maps sequences onto a paged KV cache. One layer's K (or V) cache
// is NumBlocks × BlockSize × width (width = nKV·headDim), NumBlocks being
// the cache's length over BlockSize·width. Token position p of sequence s
// lives in block Table[s·MaxBlocks + p/BlockSize], row p % BlockSize, so
// sequences that share a prompt can point at the same blocks and a
// sequence's blocks need not be adjacent. A contiguous cache (training,
// scoring) is the identity table with BlockSize = maxLen and MaxBlocks = 1:
// sequence s is block s.
//
// The ops read only the table entries of blocks that hold positions a
// token writes or attends to (0..pos[t] of its sequence, or under a
// sliding window of W keys max(0, pos[t]−W+1)..pos[t]); the others may
// hold anything, such as -1 for a block not yet mapped or one returned
// behind every window.
type KVPages struct {
	Table     Buffer // I32, seqs × MaxBlocks
	BlockSize int
	MaxBlocks int
}

// Seqs is the number of sequences (rows) of the table.
func (p KVPages) Seqs() int { return p.Table.Len() / p.MaxBlocks }

// MaxLen is the most positions one sequence can hold.
func (p KVPages) MaxLen() int { return p.BlockSize * p.MaxBlocks }

// Check panics, naming op, unless the pages describe a table whose rows
// are MaxBlocks I32 entries and whose blocks are positive-sized.
func (p KVPages) Check(op string) {
	switch {
	case p.Table == nil:
		panic(fmt.Sprintf("kernels: %s: KVPages.Table is nil", op))
	case p.Table.DType() != I32:
		panic(fmt.Sprintf("kernels: %s: KVPages.Table has dtype %v, want i32", op, p.Table.DType()))
	case p.BlockSize <= 0 || p.MaxBlocks <= 0:
		panic(fmt.Sprintf("kernels: %s: KVPages block size %d and max blocks %d must be positive", op, p.BlockSize, p.MaxBlocks))
	case p.Table.Len()%p.MaxBlocks != 0 || p.Table.Len() == 0:
		panic(fmt.Sprintf("kernels: %s: KVPages.Table has %d entries, not a positive multiple of max blocks %d", op, p.Table.Len(), p.MaxBlocks))
	}
}

// IdentityTable is the block table of a contiguous cache of seqs
// sequences: sequence s is block s (BlockSize = maxLen, MaxBlocks = 1).
func IdentityTable(seqs int) []int32 {
	t := make([]int32, seqs)
	for i := range t {
		t[i] = int32(i)
	}
	return t
}
