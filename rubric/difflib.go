package rubric

import "sort"

// Ratio returns the similarity of a and b in [0, 1] exactly as CPython's
// difflib.SequenceMatcher(None, a, b).ratio() computes it: 2*M/T, where T is the
// total number of code points and M the number of code points in the matching
// blocks that difflib finds. Two empty strings have ratio 1.
//
// The strings are compared as sequences of Unicode code points, as a Python str
// is; invalid UTF-8 bytes count as U+FFFD each. Note that Ratio is not
// symmetric: like difflib's, its autojunk heuristic looks at b only.
func Ratio(a, b string) float64 {
	return RatioRunes([]rune(a), []rune(b))
}

// RatioRunes is Ratio on code-point slices.
func RatioRunes(a, b []rune) float64 {
	total := len(a) + len(b)
	if total == 0 {
		return 1.0
	}
	m := newSeqMatcher(a, b)
	matches := 0
	for _, blk := range m.matchingBlocks() {
		matches += blk.size
	}
	// Same float operations as difflib's _calculate_ratio: 2.0*matches/length.
	return 2.0 * float64(matches) / float64(total)
}

// block is a matching block: a[i:i+size] == b[j:j+size].
type block struct{ i, j, size int }

// seqMatcher is SequenceMatcher(isjunk=None, autojunk=True) on code points.
// Code points are renamed to dense ids so that the index from id to positions
// in b is a slice rather than a map.
type seqMatcher struct {
	a, b []int32 // ids; a code point of a that is absent from b gets -1
	// b2j[id] lists the positions of id in b in increasing order, or is nil
	// when the id is "popular" (autojunk) and so never starts a match.
	b2j [][]int32
	// Rows of find_longest_match's j2len dynamic programme, kept as two
	// arrays indexed by j. An entry is valid only if its stamp equals the
	// row it was written in, which replaces clearing a dict for every row.
	prevLen, curLen     []int32
	prevStamp, curStamp []int64
	row                 int64
}

func newSeqMatcher(ra, rb []rune) *seqMatcher {
	ids := make(map[rune]int32, 64)
	m := &seqMatcher{a: make([]int32, len(ra)), b: make([]int32, len(rb))}
	for j, r := range rb {
		id, ok := ids[r]
		if !ok {
			id = int32(len(ids))
			ids[r] = id
		}
		m.b[j] = id
	}
	for i, r := range ra {
		if id, ok := ids[r]; ok {
			m.a[i] = id
		} else {
			m.a[i] = -1
		}
	}
	counts := make([]int32, len(ids))
	for _, id := range m.b {
		counts[id]++
	}
	// difflib's autojunk: when len(b) >= 200, an element occurring more than
	// len(b)//100 + 1 times is "popular" and removed from b2j. It is not
	// junk in the isbjunk sense (isjunk is None), which matters below.
	popular := func(int32) bool { return false }
	if n := len(rb); n >= 200 {
		limit := int32(n/100 + 1)
		popular = func(c int32) bool { return c > limit }
	}
	m.b2j = make([][]int32, len(ids))
	for id, c := range counts {
		if !popular(c) {
			m.b2j[id] = make([]int32, 0, c)
		}
	}
	for j, id := range m.b {
		if m.b2j[id] != nil {
			m.b2j[id] = append(m.b2j[id], int32(j))
		}
	}
	nb := len(rb)
	m.prevLen, m.curLen = make([]int32, nb), make([]int32, nb)
	m.prevStamp, m.curStamp = make([]int64, nb), make([]int64, nb)
	return m
}

// findLongestMatch is difflib's find_longest_match(alo, ahi, blo, bhi) with an
// empty isbjunk: the longest block a[i:i+k] == b[j:j+k] built from non-popular
// elements (ties: smallest i, then smallest j), then extended on both sides by
// equal elements of any kind, popular ones included.
func (m *seqMatcher) findLongestMatch(alo, ahi, blo, bhi int) block {
	besti, bestj, bestsize := alo, blo, 0
	// Skip a stamp so that no entry written by an earlier call looks like
	// it belongs to this call's first "previous row" (j2len starts empty).
	m.row++
	for i := alo; i < ahi; i++ {
		m.row++
		m.prevLen, m.curLen = m.curLen, m.prevLen
		m.prevStamp, m.curStamp = m.curStamp, m.prevStamp
		id := m.a[i]
		if id < 0 {
			continue
		}
		js := m.b2j[id]
		// Positions below blo are skipped, as difflib's `continue` does.
		start := sort.Search(len(js), func(x int) bool { return int(js[x]) >= blo })
		for _, j32 := range js[start:] {
			j := int(j32)
			if j >= bhi {
				break
			}
			k := int32(1)
			if j > 0 && m.prevStamp[j-1] == m.row-1 {
				k = m.prevLen[j-1] + 1
			}
			m.curLen[j], m.curStamp[j] = k, m.row
			if int(k) > bestsize {
				besti, bestj, bestsize = i-int(k)+1, j-int(k)+1, int(k)
			}
		}
	}
	// Extension by equal elements on each end. difflib does this twice,
	// first with non-junk then with junk elements; with isjunk=None every
	// element is non-junk, so the second pair of loops never moves.
	for besti > alo && bestj > blo && m.a[besti-1] == m.b[bestj-1] {
		besti, bestj, bestsize = besti-1, bestj-1, bestsize+1
	}
	for besti+bestsize < ahi && bestj+bestsize < bhi && m.a[besti+bestsize] == m.b[bestj+bestsize] {
		bestsize++
	}
	return block{besti, bestj, bestsize}
}

// matchingBlocks is difflib's get_matching_blocks without the final sentinel:
// recursive longest matches left and right of each found block (an explicit
// LIFO queue, as difflib uses), sorted, with adjacent blocks merged.
func (m *seqMatcher) matchingBlocks() []block {
	type span struct{ alo, ahi, blo, bhi int }
	queue := []span{{0, len(m.a), 0, len(m.b)}}
	var found []block
	for len(queue) > 0 {
		s := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		x := m.findLongestMatch(s.alo, s.ahi, s.blo, s.bhi)
		if x.size == 0 {
			continue
		}
		found = append(found, x)
		if s.alo < x.i && s.blo < x.j {
			queue = append(queue, span{s.alo, x.i, s.blo, x.j})
		}
		if x.i+x.size < s.ahi && x.j+x.size < s.bhi {
			queue = append(queue, span{x.i + x.size, s.ahi, x.j + x.size, s.bhi})
		}
	}
	sort.Slice(found, func(p, q int) bool {
		if found[p].i != found[q].i {
			return found[p].i < found[q].i
		}
		if found[p].j != found[q].j {
			return found[p].j < found[q].j
		}
		return found[p].size < found[q].size
	})
	var merged []block
	cur := block{}
	for _, x := range found {
		if cur.i+cur.size == x.i && cur.j+cur.size == x.j {
			cur.size += x.size
			continue
		}
		if cur.size > 0 {
			merged = append(merged, cur)
		}
		cur = x
	}
	if cur.size > 0 {
		merged = append(merged, cur)
	}
	return merged
}
