package kerneltest

import (
	"math/rand/v2"

	"github.com/grpo-dev/grpo/kernels"
)

// Pages is a block table on the host, as the references read it: position
// pos of sequence s is cache row Table[s·MaxBlocks + pos/BlockSize]·
// BlockSize + pos%BlockSize (kernels.KVPages).
type Pages struct {
	Table                []int32
	BlockSize, MaxBlocks int
	NumBlocks            int // blocks in the cache
}

// Row is the cache row holding position pos of sequence s.
func (p Pages) Row(s, pos int) int {
	return int(p.Table[s*p.MaxBlocks+pos/p.BlockSize])*p.BlockSize + pos%p.BlockSize
}

// Rows is the number of cache rows: NumBlocks·BlockSize.
func (p Pages) Rows() int { return p.NumBlocks * p.BlockSize }

// IdentityPages is the contiguous layout of seqs sequences of maxLen
// positions: sequence s is block s.
func IdentityPages(seqs, maxLen int) Pages {
	return Pages{Table: kernels.IdentityTable(seqs), BlockSize: maxLen, MaxBlocks: 1, NumBlocks: seqs}
}

// shuffledPages lays seqs sequences of up to maxLen positions onto blocks
// of blockSize rows in a random order, with spare blocks no sequence uses;
// the first shareBlocks blocks of sequence 1 are sequence 0's (a shared
// prompt). Table entries past the last block a sequence reads (valid[s]
// positions) are −1, so an op that reads them indexes outside the cache.
func shuffledPages(rng *rand.Rand, seqs, maxLen, blockSize, shareBlocks int, valid []int32) Pages {
	maxBlocks := (maxLen + blockSize - 1) / blockSize
	p := Pages{BlockSize: blockSize, MaxBlocks: maxBlocks, NumBlocks: seqs*maxBlocks + 3}
	perm := rng.Perm(p.NumBlocks)
	p.Table = make([]int32, seqs*maxBlocks)
	for s := range seqs {
		for j := range maxBlocks {
			b := int32(perm[s*maxBlocks+j])
			if s == 1 && j < shareBlocks {
				b = p.Table[j]
			}
			if j*blockSize >= int(valid[s]) {
				b = -1
			}
			p.Table[s*maxBlocks+j] = b
		}
	}
	return p
}

// readableRows marks the cache rows holding a position some sequence may
// read (below valid[s]); every other row may hold garbage.
func (p Pages) readableRows(valid []int32) []bool {
	r := make([]bool, p.Rows())
	for s, n := range valid {
		for pos := range int(n) {
			r[p.Row(s, pos)] = true
		}
	}
	return r
}

// pagesOperand uploads the table as a guarded I32 operand and returns the
// KVPages the op sees.
func (e *env) pagesOperand(p Pages) kernels.KVPages {
	t := e.ints("pages.Table", p.Table)
	return kernels.KVPages{Table: t.view, BlockSize: p.BlockSize, MaxBlocks: p.MaxBlocks}
}
