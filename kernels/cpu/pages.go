package cpu

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// pageTable is a KVPages operand read on the host.
type pageTable struct {
	table                 []int32 // seqs × maxBlocks
	blockSize, maxBlocks  int
	seqs, numBlocks, rows int // rows = numBlocks·blockSize cache rows
}

// pagesOf checks p against a cache of cacheLen elements in rows of width.
func pagesOf(op string, p kernels.KVPages, cacheLen, width int) pageTable {
	p.Check(op)
	rowsPerBlock := p.BlockSize * width
	if cacheLen%rowsPerBlock != 0 || cacheLen == 0 {
		panic(fmt.Sprintf("cpu.%s: cache of %d elements is not a whole number of blocks of %d rows × %d", op, cacheLen, p.BlockSize, width))
	}
	pt := pageTable{table: ints(op, "pages.Table", p.Table, p.Table.Len()), blockSize: p.BlockSize, maxBlocks: p.MaxBlocks,
		seqs: p.Seqs(), numBlocks: cacheLen / rowsPerBlock}
	pt.rows = pt.numBlocks * p.BlockSize
	return pt
}

// row is the cache row that holds position pos of sequence s.
func (pt pageTable) row(s, pos int) int {
	return int(pt.table[s*pt.maxBlocks+pos/pt.blockSize])*pt.blockSize + pos%pt.blockSize
}

// check validates every token's sequence and position, and every table
// entry the tokens read: under a sliding window of window keys (0: none)
// blocks first/blockSize..last/blockSize of each sequence, first being
// the earliest key its tokens attend to and last its largest position.
// Blocks behind every window may be unmapped (a sliding-window pool
// returns them as sequences advance).
func (pt pageTable) check(op string, seq, pos []int32, window int) {
	index(op, "seq", seq, pt.seqs)
	index(op, "pos", pos, pt.blockSize*pt.maxBlocks)
	av := attnVariant{window: window}
	span := make(map[int32][2]int, 8) // per sequence, its first key and largest position
	for t, s := range seq {
		f, p := av.first(int(pos[t])), int(pos[t])
		if r, ok := span[s]; ok {
			span[s] = [2]int{min(r[0], f), max(r[1], p)}
		} else {
			span[s] = [2]int{f, p}
		}
	}
	for s, r := range span {
		pt.checkBlocks(op, int(s), r[0]/pt.blockSize, r[1])
	}
}

// checkWrites validates every token's sequence and position and the table
// entry of the block it writes: an op that only writes rows reads no
// other entry.
func (pt pageTable) checkWrites(op string, seq, pos []int32) {
	index(op, "seq", seq, pt.seqs)
	index(op, "pos", pos, pt.blockSize*pt.maxBlocks)
	for t, s := range seq {
		pt.checkBlocks(op, int(s), int(pos[t])/pt.blockSize, int(pos[t]))
	}
}

// checkBlocks panics unless blocks from..p/blockSize of sequence s name
// blocks of the cache (p: the position read).
func (pt pageTable) checkBlocks(op string, s, from, p int) {
	row := pt.table[s*pt.maxBlocks:][:p/pt.blockSize+1]
	for j := from; j < len(row); j++ {
		if b := row[j]; b < 0 || int(b) >= pt.numBlocks {
			panic(fmt.Sprintf("cpu.%s: pages.Table[%d·%d+%d] = %d (sequence %d reads position %d), outside the cache's %d blocks",
				op, s, pt.maxBlocks, j, b, s, p, pt.numBlocks))
		}
	}
}

// owners maps each sequence the tokens name to a representative: two
// sequences that read a common cache block (directly, or through others)
// have the same one, so their dK/dV writes must not run concurrently.
// Sequences that share nothing are their own representative.
func (pt pageTable) owners(seq, pos []int32) map[int32]int32 {
	last := make(map[int32]int32, 8)
	for t, s := range seq {
		if p, ok := last[s]; !ok || pos[t] > p {
			last[s] = pos[t]
		}
	}
	parent := make(map[int32]int32, len(last))
	var find func(s int32) int32
	find = func(s int32) int32 {
		for parent[s] != s {
			parent[s] = parent[parent[s]]
			s = parent[s]
		}
		return s
	}
	for s := range last {
		parent[s] = s
	}
	byBlock := make(map[int32]int32)
	for s, p := range last {
		for _, b := range pt.table[int(s)*pt.maxBlocks:][:int(p)/pt.blockSize+1] {
			if o, ok := byBlock[b]; ok {
				parent[find(s)] = find(o)
			} else {
				byBlock[b] = s
			}
		}
	}
	for s := range parent {
		parent[s] = find(s)
	}
	return parent
}

// segment is a run of positions held in consecutive cache rows:
// positions pos..pos+n−1 of a sequence are rows row..row+n−1.
type segment struct{ pos, row, n int }

// segments appends to dst the runs covering positions from..n−1 of
// sequence s. Physically adjacent blocks (a contiguous cache, or blocks
// allocated in order) merge into one run, so each run is one sgemm
// operand.
func (pt pageTable) segments(dst []segment, s, from, n int) []segment {
	dst = dst[:0]
	for p := from; p < n; {
		r := pt.row(s, p)
		k := min(pt.blockSize-p%pt.blockSize, n-p)
		if l := len(dst) - 1; l >= 0 && dst[l].row+dst[l].n == r {
			dst[l].n += k
		} else {
			dst = append(dst, segment{p, r, k})
		}
		p += k
	}
	return dst
}
