package kerneltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// attnVar is a case's attention variant: a sliding window of window keys
// (0: none) and, with sinks, one sink logit per query head drawn uniform
// in [−3, 3) — wide enough that some sinks dominate a row and some vanish.
type attnVar struct {
	window int
	sinks  bool
}

func (av attnVar) String() string { return fmt.Sprintf("window=%d,sinks=%v", av.window, av.sinks) }

// operands uploads the variant's sinks and returns the op's variant and
// the reference's. The zero variant draws nothing, so the plain cases'
// random streams are unchanged.
func (av attnVar) operands(e *env, nHead int) (kernels.AttentionVariant, RefVariant) {
	v, ref := kernels.AttentionVariant{Window: av.window}, RefVariant{Window: av.window}
	if av.sinks {
		s := e.in("sinks", e.uniform(nHead, 3))
		v.Sinks, ref.Sinks = s.view, s.values()
	}
	return v, ref
}

// firsts is, per sequence, the first position any of its tokens attends
// to (0 without a window).
func (av attnVar) firsts(seqv, posv []int32, seqs int) []int32 {
	f := make([]int32, seqs)
	for s := range f {
		f[s] = -1
	}
	for t, s := range seqv {
		p := int32(RefVariant{Window: av.window}.first(int(posv[t])))
		if f[s] < 0 || p < f[s] {
			f[s] = p
		}
	}
	for s := range f {
		f[s] = max(f[s], 0)
	}
	return f
}

// readableRowsFrom marks the cache rows holding a position some sequence
// may read (first[s]..valid[s]−1); every other row may hold garbage.
func (p Pages) readableRowsFrom(first, valid []int32) []bool {
	r := make([]bool, p.Rows())
	for s, n := range valid {
		for pos := int(first[s]); pos < int(n); pos++ {
			r[p.Row(s, pos)] = true
		}
	}
	return r
}

// unmapBehind sets to −1 the table entries of the blocks wholly before
// each sequence's first read position, as a sliding-window pool returns
// them (model's windowPool): an op that reads such an entry indexes
// outside the cache.
func (p Pages) unmapBehind(first []int32) {
	for s, f := range first {
		for j := range int(f) / p.BlockSize {
			p.Table[s*p.MaxBlocks+j] = -1
		}
	}
}

// attentionVariantCases run Attention's shapes under sliding windows and
// sinks: a window of 1 (each token sees itself only), windows crossing
// page-block and flash-tile boundaries (prefill of 300 in blocks of 16
// with a window of 70; decode tokens whose windows start mid-block), a
// window at least the sequence's length (the full result), sinks alone
// (with scores large enough to need max-subtraction), sinks with a
// window, GQA ratios 1 to 4, the scalar kernels' head dim 256, and the
// lse. Rows before every window hold NaN, so reading them fails, and in
// a paged cache the table entries of blocks wholly before every window
// are −1 (unmapBehind), so reading those fails too.
func attentionVariantCases() []Case {
	type vshape struct {
		attnShape
		attnVar
	}
	shapes := []vshape{
		{attnShape{"window1", 4, 2, 16, 1, 16, run(0, 0, 12), 1, true, paging{}}, attnVar{1, false}},
		{attnShape{"window1-decode", 8, 2, 64, 3, 40, []tok{{0, 17}, {1, 0}, {2, 39}}, 1, true, paging{block: 16}}, attnVar{1, true}},
		{attnShape{"window-crosses-blocks", 8, 2, 64, 3, 40, []tok{{0, 17}, {1, 0}, {2, 39}}, 1, true, paging{block: 16}}, attnVar{20, false}},
		{attnShape{"window-prefill300", 4, 2, 64, 1, 300, run(0, 0, 299), 1, true, paging{block: 16}}, attnVar{70, true}},
		{attnShape{"window-ge-length", 4, 2, 64, 3, 12, cat(run(1, 0, 6), run(0, 5, 9), run(2, 0, 0)), 1, true, paging{}}, attnVar{12, false}},
		{attnShape{"sinks", 4, 2, 64, 3, 12, cat(run(1, 0, 6), run(0, 5, 9), run(2, 0, 0)), 1, true, paging{block: 4}}, attnVar{0, true}},
		{attnShape{"sinks-large-scores", 2, 1, 16, 1, 8, run(0, 0, 7), 200, true, paging{}}, attnVar{0, true}},
		{attnShape{"sinks-window-gqa4", 4, 1, 16, 3, 12, cat(run(1, 0, 6), run(0, 5, 9), run(2, 0, 0)), 1, true, paging{block: 5}}, attnVar{4, true}},
		{attnShape{"sinks-window-gqa1", 2, 2, 16, 4, 10, []tok{{3, 9}, {0, 4}, {2, 1}, {1, 0}}, 1, false, paging{}}, attnVar{3, true}},
		{attnShape{"sinks-window-shared-prompt", 4, 2, 16, 3, 20, cat(run(0, 0, 10), run(1, 11, 13), []tok{{2, 3}}), 1, true, paging{block: 4, share: 2}}, attnVar{5, true}},
		{attnShape{"sinks-window-headdim128", 2, 1, 128, 2, 80, cat(run(0, 0, 79), run(1, 0, 4)), 1, true, paging{}}, attnVar{9, true}},
		{attnShape{"sinks-window-headdim256", 2, 1, 256, 2, 12, cat(run(0, 0, 4), []tok{{1, 9}}), 1, true, paging{block: 4}}, attnVar{3, true}},
	}
	var cs []Case
	for _, dt := range attnDTs {
		for i, s := range shapes {
			s, seed := s, uint64(1100+i)
			cs = append(cs, Case{Op: "Attention",
				Name: fmt.Sprintf("%s,%v,%v,%v,nHead=%d,nKV=%d,headDim=%d,nTok=%d,lse=%v",
					s.name, s.attnVar, s.paging, dt, s.nHead, s.nKV, s.headDim, len(s.toks), s.lse),
				check: func(b kernels.Backend) error { return checkAttention(b, seed, s.attnShape, dt, s.attnVar) }})
		}
	}
	return cs
}

// sharedPrefixVariantCases run the shared-prefix groups under windows
// that start inside and past the groups' shared blocks (so the prefix
// pass must skip whole blocks) and with sinks, which must join each row's
// softmax once, not once per pass.
func sharedPrefixVariantCases() []Case {
	type vshape struct {
		sharedShape
		attnVar
	}
	shapes := []vshape{
		{sharedShape{"g4-g3-alone-gqa2", 4, 2, 64, 4, []prefixGroup{{10, []int{10, 13, 11, 17}}, {7, []int{9}}, {9, []int{12, 9, 10}}}}, attnVar{6, true}},
		{sharedShape{"g8-g2-gqa1", 2, 2, 16, 5, []prefixGroup{{12, []int{12, 14, 13, 19, 12, 15, 16, 12}}, {23, []int{24, 30}}}}, attnVar{0, true}},
		{sharedShape{"g3-g6-gqa12", 12, 1, 32, 4, []prefixGroup{{13, []int{13, 20, 16}}, {17, []int{17, 18, 19, 25, 33, 21}}}}, attnVar{9, false}},
		{sharedShape{"alone-g5-boundary-gqa4", 8, 2, 128, 4, []prefixGroup{{3, []int{5}}, {8, []int{8, 9, 15, 11, 10}}, {6, []int{6}}}}, attnVar{1, true}},
	}
	var cs []Case
	for _, dt := range attnDTs {
		for i, s := range shapes {
			s, seed := s, uint64(4100+i)
			cs = append(cs, Case{Op: "AttentionSharedPrefix",
				Name:  fmt.Sprintf("%s,%v,%v,nHead=%d,nKV=%d,headDim=%d,block=%d", s.name, s.attnVar, dt, s.nHead, s.nKV, s.headDim, s.block),
				check: func(b kernels.Backend) error { return checkSharedPrefix(b, seed, s.sharedShape, dt, s.attnVar) }})
		}
	}
	return cs
}

// attentionBackwardVariantCases run AttentionBackward's shapes under
// windows and sinks, against the float64 reference's derivatives and, on
// the backend's own forward, finite differences; keys before every
// window get no gradient and keep their initial dk, dv.
func attentionBackwardVariantCases() []Case {
	type vshape struct {
		attnBwdShape
		attnVar
	}
	shapes := []vshape{
		{attnBwdShape{"window1", 2, 2, 16, 1, 16, run(0, 0, 12), 1, false, paging{}}, attnVar{1, false}},
		{attnBwdShape{"window-packed-gqa2", 4, 2, 64, 3, 12, cat(run(1, 0, 6), run(0, 5, 9), run(2, 0, 0)), 1, true, paging{block: 4}}, attnVar{3, false}},
		{attnBwdShape{"sinks-peaked-gqa2", 4, 2, 16, 1, 24, run(0, 0, 23), 8, false, paging{}}, attnVar{0, true}},
		{attnBwdShape{"sinks-window-gqa4", 4, 1, 16, 3, 12, cat(run(1, 0, 6), run(0, 5, 9), run(2, 0, 0)), 1, true, paging{block: 5}}, attnVar{4, true}},
		{attnBwdShape{"sinks-window-decode", 4, 2, 32, 3, 40, []tok{{0, 17}, {1, 0}, {2, 39}}, 1, true, paging{block: 16}}, attnVar{20, true}},
		{attnBwdShape{"sinks-window-shared-prompt", 4, 2, 16, 3, 20, cat(run(0, 0, 10), run(1, 11, 13), []tok{{2, 3}}), 1, false, paging{block: 4, share: 2}}, attnVar{5, true}},
		{attnBwdShape{"sinks-window-long", 2, 1, 128, 2, 150, cat(run(0, 0, 149), run(1, 0, 4)), 1, true, paging{}}, attnVar{70, true}},
		{attnBwdShape{"sinks-window-headdim256", 2, 1, 256, 2, 40, cat(run(0, 0, 37), []tok{{1, 9}}), 1, true, paging{block: 4}}, attnVar{9, true}},
	}
	var cs []Case
	for _, dt := range attnDTs {
		for i, s := range shapes {
			if !dt.backwardRuns(s.headDim) {
				continue
			}
			s, seed := s, uint64(2700+i)
			cs = append(cs, trainCase("AttentionBackward",
				fmt.Sprintf("%s,%v,%v,%v,nHead=%d,nKV=%d,headDim=%d,nTok=%d,accumulate=%v", s.name, s.attnVar, s.paging, dt, s.nHead, s.nKV, s.headDim, len(s.toks), s.accumulate),
				func(b kernels.Backend, tb kernels.TrainOps) error {
					return checkAttentionBackward(b, tb, seed, s.attnBwdShape, dt, s.attnVar)
				}))
		}
	}
	fd := []vshape{
		{attnBwdShape{"sinks-window-packed-gqa2", 4, 2, 16, 3, 12, cat(run(1, 0, 6), run(0, 5, 9), run(2, 0, 2)), 1, false, paging{block: 4}}, attnVar{3, true}},
		{attnBwdShape{"sinks-decode-gqa1", 2, 2, 16, 4, 10, []tok{{3, 9}, {0, 4}, {2, 1}, {1, 0}}, 1, false, paging{}}, attnVar{0, true}},
	}
	for i, s := range fd {
		s, seed := s, uint64(2750+i)
		cs = append(cs, trainCase("AttentionBackward",
			fmt.Sprintf("fd,%s,%v,%v,nHead=%d,nKV=%d,headDim=%d,nTok=%d", s.name, s.attnVar, s.paging, s.nHead, s.nKV, s.headDim, len(s.toks)),
			func(b kernels.Backend, tb kernels.TrainOps) error {
				return checkAttentionBackwardFD(b, tb, seed, s.attnBwdShape, s.attnVar)
			}))
	}
	return cs
}
