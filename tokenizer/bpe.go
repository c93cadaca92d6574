package tokenizer

import "sync"

// merge is the result of merging one adjacent pair of tokens.
type merge struct {
	rank int32 // position in the merges list: lower merges first
	id   int32 // the merged token
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// bpe is a byte-level BPE model over raw bytes: vocab keys are the bytes a
// token stands for, not their byte-level spelling.
type bpe struct {
	ids          map[string]int32 // raw bytes → id
	byteID       [256]int32       // single bytes, always present
	merges       map[uint64]merge // pairKey(left, right) → merge
	ignoreMerges bool             // Llama 3: a piece that is in vocab is one token

	mu    sync.RWMutex
	cache map[string][]int32
}

// Pieces longer than this are rare enough not to be worth caching, and the
// cache stops growing at maxCacheEntries so memory stays bounded.
const (
	maxCachedLen    = 256
	maxCacheEntries = 1 << 17
)

// encode appends the ids of one pre-token (raw bytes) to out.
func (m *bpe) encode(piece string, out []int32) []int32 {
	if len(piece) == 1 {
		return append(out, m.byteID[piece[0]])
	}
	if m.ignoreMerges {
		if id, ok := m.ids[piece]; ok {
			return append(out, id)
		}
	}
	if len(piece) <= maxCachedLen {
		m.mu.RLock()
		ids, ok := m.cache[piece]
		m.mu.RUnlock()
		if ok {
			return append(out, ids...)
		}
	}
	start := len(out)
	out = m.merge(piece, out)
	if len(piece) <= maxCachedLen {
		ids := append([]int32(nil), out[start:]...)
		m.mu.Lock()
		if len(m.cache) < maxCacheEntries {
			m.cache[piece] = ids
		}
		m.mu.Unlock()
	}
	return out
}

// merge runs BPE on the bytes of piece: repeatedly apply the merge with the
// lowest rank, the leftmost one among equal ranks — the order HF tokenizers'
// heap gives. Short pieces scan all pairs each round; long ones use a heap so
// a multi-kilobyte run of letters stays O(n log n).
func (m *bpe) merge(piece string, out []int32) []int32 {
	if len(piece) > 64 {
		return m.mergeHeap(piece, out)
	}
	return m.mergeScan(piece, out)
}

// mergeScan is merge for short pieces (at most 64 bytes, or more in
// tests): each round scans every adjacent pair.
func (m *bpe) mergeScan(piece string, out []int32) []int32 {
	var buf [64]int32
	syms := buf[:0]
	for i := 0; i < len(piece); i++ {
		syms = append(syms, m.byteID[piece[i]])
	}
	for len(syms) > 1 {
		best, bestRank, bestID := -1, int32(0), int32(0)
		for i := 0; i+1 < len(syms); i++ {
			if mg, ok := m.merges[pairKey(syms[i], syms[i+1])]; ok && (best < 0 || mg.rank < bestRank) {
				best, bestRank, bestID = i, mg.rank, mg.id
			}
		}
		if best < 0 {
			break
		}
		syms[best] = bestID
		syms = append(syms[:best+1], syms[best+2:]...)
	}
	return append(out, syms...)
}

// mergeHeap is merge for long pieces: symbols in a linked list, candidate
// pairs in a min-heap keyed by (rank, position of the left symbol).
func (m *bpe) mergeHeap(piece string, out []int32) []int32 {
	n := len(piece)
	id := make([]int32, n)
	next := make([]int32, n)
	prev := make([]int32, n)
	for i := 0; i < n; i++ {
		id[i] = m.byteID[piece[i]]
		next[i], prev[i] = int32(i+1), int32(i-1)
	}
	next[n-1] = -1
	h := &pairHeap{}
	push := func(i int32) {
		j := next[i]
		if j < 0 {
			return
		}
		if mg, ok := m.merges[pairKey(id[i], id[j])]; ok {
			h.push(heapItem{rank: mg.rank, pos: i, left: id[i], right: id[j], id: mg.id})
		}
	}
	for i := int32(0); i < int32(n-1); i++ {
		push(i)
	}
	const dead = -2
	for h.len() > 0 {
		it := h.pop()
		i := it.pos
		if prev[i] == dead {
			continue
		}
		j := next[i]
		// Stale entry: a neighbour merged since it was pushed.
		if j < 0 || id[i] != it.left || id[j] != it.right {
			continue
		}
		id[i] = it.id
		next[i] = next[j]
		if next[j] >= 0 {
			prev[next[j]] = i
		}
		prev[j] = dead
		if prev[i] >= 0 {
			push(prev[i])
		}
		push(i)
	}
	for i := int32(0); i >= 0; i = next[i] {
		out = append(out, id[i])
	}
	return out
}

type heapItem struct {
	rank, pos       int32
	left, right, id int32
}

func (a heapItem) less(b heapItem) bool {
	return a.rank < b.rank || a.rank == b.rank && a.pos < b.pos
}

// pairHeap is a plain binary min-heap; container/heap's interface calls
// would cost more than the merges themselves.
type pairHeap struct{ items []heapItem }

func (h *pairHeap) len() int { return len(h.items) }

func (h *pairHeap) push(x heapItem) {
	h.items = append(h.items, x)
	i := len(h.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.items[i].less(h.items[p]) {
			break
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *pairHeap) pop() heapItem {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	i := 0
	for {
		l, r, small := 2*i+1, 2*i+2, i
		if l < last && h.items[l].less(h.items[small]) {
			small = l
		}
		if r < last && h.items[r].less(h.items[small]) {
			small = r
		}
		if small == i {
			return top
		}
		h.items[i], h.items[small] = h.items[small], h.items[i]
		i = small
	}
}
