package kernels

import "fmt"

// PrefixGroupWords is the I32 words per token of AttentionSharedPrefix's
// groups operand: {first, members, sharedBlocks}. Token t belongs to the
// group of tokens first..first+members-1 (consecutive, t among them),
// whose sequences' block tables agree on their first sharedBlocks entries.
// A token in no group is its own: {t, 1, 0}.
const PrefixGroupWords = 3

// PrefixGroups derives AttentionSharedPrefix's groups operand from a decode
// step's host block table (seqs × maxBlocks, as KVPages.Table) and its
// tokens' sequences and positions: runs of consecutive tokens whose
// sequences start with the same blocks form a group (a GRPO group's
// rollouts, forked from one prompt, and placed side by side). Only blocks
// every member attends to in full are shared: a block is shared when
// its last position is at or below each member's position, so the partly
// filled last prompt block, which each rollout copies on write, is not.
// A run of one token, or tokens sharing no full block, gets {t, 1, 0}.
// The result has len(seq)·PrefixGroupWords entries.
func PrefixGroups(table []int32, maxBlocks, blockSize int, seq, pos []int32) []int32 {
	if len(seq) != len(pos) {
		panic(fmt.Sprintf("kernels: PrefixGroups: %d sequences for %d positions", len(seq), len(pos)))
	}
	n := len(seq)
	out := make([]int32, n*PrefixGroupWords)
	// full is the blocks of token t's sequence it attends to in full.
	full := func(t int) int { return min((int(pos[t])+1)/blockSize, maxBlocks) }
	common := func(a, b int) int {
		ra, rb := table[int(seq[a])*maxBlocks:][:maxBlocks], table[int(seq[b])*maxBlocks:][:maxBlocks]
		c, lim := 0, min(full(a), full(b))
		for c < lim && ra[c] == rb[c] {
			c++
		}
		return c
	}
	for t0 := 0; t0 < n; {
		shared, t1 := full(t0), t0+1
		for t1 < n {
			c := common(t0, t1)
			if c == 0 {
				break
			}
			shared = min(shared, c)
			t1++
		}
		if t1-t0 == 1 {
			shared = 0
		}
		for t := t0; t < t1; t++ {
			w := out[t*PrefixGroupWords:]
			w[0], w[1], w[2] = int32(t0), int32(t1-t0), int32(shared)
			if shared == 0 {
				w[0], w[1] = int32(t), 1
			}
		}
		t0 = t1
	}
	return out
}

// CheckPrefixGroups returns what is wrong with a groups operand for
// tokens of the given sequences and positions over table, or nil: every
// group's members are consecutive and name the same group, share their
// first sharedBlocks table entries, and attend to every shared position.
func CheckPrefixGroups(groups, table []int32, maxBlocks, blockSize int, seq, pos []int32) error {
	n := len(seq)
	if len(groups) != n*PrefixGroupWords {
		return fmt.Errorf("groups has %d words for %d tokens, want %d", len(groups), n, n*PrefixGroupWords)
	}
	for t := range n {
		w := groups[t*PrefixGroupWords:][:PrefixGroupWords]
		first, members, shared := int(w[0]), int(w[1]), int(w[2])
		switch {
		case members < 1 || first < 0 || first > t || t >= first+members || first+members > n:
			return fmt.Errorf("token %d: group {first %d, members %d} does not hold it within %d tokens", t, first, members, n)
		case shared < 0 || shared > maxBlocks:
			return fmt.Errorf("token %d: %d shared blocks outside 0..%d", t, shared, maxBlocks)
		case shared*blockSize > int(pos[t])+1:
			return fmt.Errorf("token %d at position %d does not attend to all %d shared blocks of %d", t, pos[t], shared, blockSize)
		}
		for m := first; m < first+members; m++ {
			g := groups[m*PrefixGroupWords:][:PrefixGroupWords]
			if g[0] != w[0] || g[1] != w[1] || g[2] != w[2] {
				return fmt.Errorf("token %d: group %v differs from its member token %d's %v", t, w, m, g)
			}
		}
		a, b := table[int(seq[first])*maxBlocks:][:shared], table[int(seq[t])*maxBlocks:][:shared]
		for j := range a {
			if a[j] != b[j] {
				return fmt.Errorf("token %d: shared block %d is %d, its group's first token %d has %d", t, j, b[j], first, a[j])
			}
		}
	}
	return nil
}
