package kerneltest

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// prefixGroup is one prompt and the decode positions of the rollouts
// forked from it; a group of one is a row that shares nothing.
type prefixGroup struct {
	prompt int   // prompt positions: its full blocks are shared
	pos    []int // each member's decode position (≥ prompt)
}

type sharedShape struct {
	name                string
	nHead, nKV, headDim int
	block               int
	groups              []prefixGroup
}

// sharedPrefixCases cover groups of 2 to 8 rollouts beside rows in no
// group, prompts that end inside a block (its partly filled last block
// is each rollout's own copy, as the sampler's copy on write leaves it)
// and on a block boundary, GQA ratios 1, 2, 4 and 12 (more query heads
// than one block of the prefix pass holds: its tiles cross members),
// head dims 16, 64 and 128, blocks of one row (a training trace's
// shared-prompt cache), on f32 and bf16 caches and with a bf16 q beside
// bf16 ones (attnDTs), with tokens mapped to sequences out of order. Every group's prompt blocks hold different
// values, and rows no token reads hold NaN, so a pass reading the prefix
// through another row's table or past a position fails.
func sharedPrefixCases() []Case {
	shapes := []sharedShape{
		{"g4-g3-alone-gqa2", 4, 2, 64, 4, []prefixGroup{{10, []int{10, 13, 11, 17}}, {7, []int{9}}, {9, []int{12, 9, 10}}}},
		{"g8-g2-gqa1", 2, 2, 16, 5, []prefixGroup{{12, []int{12, 14, 13, 19, 12, 15, 16, 12}}, {23, []int{24, 30}}}},
		{"alone-g5-boundary-gqa4", 8, 2, 128, 4, []prefixGroup{{3, []int{5}}, {8, []int{8, 9, 15, 11, 10}}, {6, []int{6}}}},
		{"g3-g6-gqa12", 12, 1, 32, 4, []prefixGroup{{13, []int{13, 20, 16}}, {17, []int{17, 18, 19, 25, 33, 21}}}},
		{"g3-alone-rows-gqa2", 4, 2, 32, 1, []prefixGroup{{9, []int{9, 14, 11}}, {4, []int{6}}}},
	}
	var cs []Case
	for _, dt := range attnDTs {
		for i, s := range shapes {
			s, seed := s, uint64(4000+i)
			cs = append(cs, Case{Op: "AttentionSharedPrefix",
				Name:  fmt.Sprintf("%s,%v,nHead=%d,nKV=%d,headDim=%d,block=%d", s.name, dt, s.nHead, s.nKV, s.headDim, s.block),
				check: func(b kernels.Backend) error { return checkSharedPrefix(b, seed, s, dt, attnVar{}) }})
		}
	}
	return cs
}

// sharedPages lays the shape's rows onto shuffled blocks: each group's
// members point at the same blocks for the prompt's full blocks and at
// blocks of their own after; token t is sequence seqOf[t] (a fixed
// permutation, so token and sequence indices differ). Entries past a
// row's position are −1.
func (s sharedShape) sharedPages(e *env) (pg Pages, seqv, posv, valid []int32) {
	maxLen := 0
	n := 0
	for _, g := range s.groups {
		for _, p := range g.pos {
			maxLen = max(maxLen, p+1)
			n++
		}
	}
	maxBlocks := (maxLen + s.block - 1) / s.block
	pg = Pages{BlockSize: s.block, MaxBlocks: maxBlocks, NumBlocks: n*maxBlocks + 2}
	perm := e.rng.Perm(pg.NumBlocks)
	next := 0
	alloc := func() int32 { next++; return int32(perm[next-1]) }
	pg.Table = make([]int32, n*maxBlocks)
	seqv, posv, valid = make([]int32, n), make([]int32, n), make([]int32, n)
	t := 0
	for _, g := range s.groups {
		shared := make([]int32, g.prompt/s.block)
		for j := range shared {
			shared[j] = alloc()
		}
		for _, p := range g.pos {
			sq := (n + 2 - t) % n // reversed and rotated
			seqv[t], posv[t], valid[sq] = int32(sq), int32(p), int32(p+1)
			row := pg.Table[sq*maxBlocks:][:maxBlocks]
			for j := range row {
				switch {
				case j*s.block > p:
					row[j] = -1
				case j < len(shared):
					row[j] = shared[j]
				default:
					row[j] = alloc()
				}
			}
			t++
		}
	}
	return pg, seqv, posv, valid
}

// checkSharedPrefix runs AttentionSharedPrefix with the groups
// kernels.PrefixGroups derives from the table and compares it with the
// plain Attention reference under variant av: within tolMatMul with an
// f32 q (the split-KV passes widen a bf16 cache exactly), within
// tolAttentionBF16 with a bf16 one (the tensor-core kernels round the
// probabilities); the derived groups must be the shape's.
func checkSharedPrefix(b kernels.Backend, seed uint64, s sharedShape, dt attnDT, av attnVar) error {
	e := newEnv(b, seed)
	defer e.free()
	pg, seqv, posv, valid := s.sharedPages(e)
	n := len(seqv)
	groups := kernels.PrefixGroups(pg.Table, pg.MaxBlocks, pg.BlockSize, seqv, posv)
	if err := s.wantGroups(groups); err != nil {
		return err
	}
	row := s.nKV * s.headDim
	readable := pg.readableRowsFrom(av.firsts(seqv, posv, n), valid)
	kv := func() []float32 {
		v := e.uniform(pg.Rows()*row, 1)
		for r, ok := range readable {
			if !ok {
				for j := range row {
					v[r*row+j] = float32(math.NaN())
				}
			}
		}
		return v
	}
	q := dt.operand(e, "q", dt.q, e.uniform(n*s.nHead*s.headDim, 1))
	k, v := dt.operand(e, "kCache", dt.kv, kv()), dt.operand(e, "vCache", dt.kv, kv())
	seq, pos, gr := e.ints("seq", seqv), e.ints("pos", posv), e.ints("groups", groups)
	pages := e.pagesOperand(pg)
	out, lse := e.floats("out", dt.act, nans(n*s.nHead*s.headDim), false), e.out("lse", nans(n*s.nHead))
	scale := float32(1 / math.Sqrt(float64(s.headDim)))
	variant, ref := av.operands(e, s.nHead)
	wantOut, wantLse := RefAttentionVariant(q.values(), k.values(), v.values(), seqv, posv, pg, n, s.nHead, s.nKV, s.headDim, float64(scale), ref)
	b.AttentionSharedPrefix(out.view, lse.view, q.view, k.view, v.view, seq.view, pos.view, gr.view, pages, n, s.nHead, s.nKV, s.headDim, scale, variant)
	if err := e.checkAll(); err != nil {
		return err
	}
	tol := tolMatMul
	if dt.q == kernels.BF16 {
		tol = tolAttentionBF16
	}
	if err := CompareStored("out", dt.act, out.result(b), wantOut, tol); err != nil {
		return err
	}
	return Compare("lse", lse.result(b), wantLse, tol)
}

// wantGroups checks PrefixGroups' answer against the shape's groups: a
// group of several members shares its prompt's full blocks; a group of
// one, or a prompt shorter than a block, shares nothing.
func (s sharedShape) wantGroups(got []int32) error {
	t := 0
	for _, g := range s.groups {
		first, members, shared := t, len(g.pos), g.prompt/s.block
		if members == 1 || shared == 0 {
			members, shared = 1, 0
		}
		for range g.pos {
			if members == 1 {
				first = t
			}
			w := got[t*kernels.PrefixGroupWords:][:kernels.PrefixGroupWords]
			if int(w[0]) != first || int(w[1]) != members || int(w[2]) != shared {
				return fmt.Errorf("PrefixGroups: token %d is in group %v, want {%d %d %d}", t, w, first, members, shared)
			}
			t++
		}
	}
	return nil
}
