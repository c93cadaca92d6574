package kerneltest

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// tok is one query token: its sequence (row of the block table) and
// position.
type tok struct{ seq, pos int32 }

// run returns tokens of one sequence at positions from..to inclusive.
func run(seq, from, to int32) []tok {
	var ts []tok
	for p := from; p <= to; p++ {
		ts = append(ts, tok{seq, p})
	}
	return ts
}

// paging is how a case lays its sequences onto cache blocks: block 0 is
// the contiguous identity layout (one block of maxLen rows per
// sequence); otherwise blocks of that many rows in shuffled order, the
// last one partly used when maxLen or a sequence's length is not a
// multiple, with sequence 1's first share blocks being sequence 0's.
// With bf16 (KVWrite's cases) the cache is a BF16 buffer, as the
// sampler's is on a GPU (Description.KVCache): KVWrite rounds to nearest
// even, exactly. (The Attention and AttentionBackward cases run every
// shape on both cache dtypes.)
type paging struct {
	block, share int
	bf16         bool
}

func (pg paging) String() string {
	s := "contiguous"
	switch {
	case pg.block > 0 && pg.share > 0:
		s = fmt.Sprintf("paged%d-share%d", pg.block, pg.share)
	case pg.block > 0:
		s = fmt.Sprintf("paged%d", pg.block)
	}
	if pg.bf16 {
		s += ",bf16-cache"
	}
	return s
}

// cacheDType is the dtype of the case's K/V cache buffers.
func (pg paging) cacheDType() kernels.DType {
	if pg.bf16 {
		return kernels.BF16
	}
	return kernels.F32
}

// layout builds the case's block table; valid[s] is the number of
// positions of sequence s that tokens write or read.
func (pg paging) layout(e *env, seqs, maxLen int, valid []int32) Pages {
	if pg.block == 0 {
		return IdentityPages(seqs, maxLen)
	}
	return shuffledPages(e.rng, seqs, maxLen, pg.block, pg.share, valid)
}

// seqsAndPositions splits the tokens and counts, per sequence, the
// positions they write or read.
func seqsAndPositions(toks []tok, seqs int) (seqv, posv, valid []int32) {
	seqv, posv, valid = make([]int32, len(toks)), make([]int32, len(toks)), make([]int32, seqs)
	for t, tk := range toks {
		seqv[t], posv[t] = tk.seq, tk.pos
		valid[tk.seq] = max(valid[tk.seq], tk.pos+1)
	}
	return seqv, posv, valid
}

func cat(runs ...[]tok) []tok {
	var ts []tok
	for _, r := range runs {
		ts = append(ts, r...)
	}
	return ts
}

func kvWriteCases() []Case {
	type shape struct {
		slots, maxLen, width int
		toks                 []tok
		paging
	}
	shapes := []shape{
		{1, 1, 1, []tok{{0, 0}}, paging{}},
		{3, 9, 16, cat(run(2, 0, 3), []tok{{0, 8}, {1, 5}}), paging{}},
		{2, 40, 128, cat(run(1, 10, 30), run(0, 0, 0)), paging{}},
		{3, 9, 16, cat(run(2, 0, 3), []tok{{0, 8}, {1, 5}}), paging{block: 4}},
		{2, 40, 128, cat(run(1, 10, 30), run(0, 0, 6)), paging{block: 16}},
		{3, 9, 16, cat(run(2, 0, 3), []tok{{0, 8}, {1, 5}}), paging{block: 4, bf16: true}},
	}
	var cs []Case
	for i, s := range shapes {
		s, seed := s, uint64(900+i)
		cs = append(cs, Case{Op: "KVWrite", Name: fmt.Sprintf("%v,slots=%d,maxLen=%d,width=%d,nTok=%d", s.paging, s.slots, s.maxLen, s.width, len(s.toks)),
			check: func(b kernels.Backend) error {
				e := newEnv(b, seed)
				defer e.free()
				n := len(s.toks)
				seqv, posv, valid := seqsAndPositions(s.toks, s.slots)
				pg := s.layout(e, s.slots, s.maxLen, valid)
				cache := e.floats("cache", s.cacheDType(), e.uniform(pg.Rows()*s.width, 1), false) // rows not written must survive
				x := e.in("x", e.uniform(n*s.width, 1))
				seq, pos := e.ints("seq", seqv), e.ints("pos", posv)
				pages := e.pagesOperand(pg)
				want := RefKVWrite(cache.values(), x.values(), seqv, posv, pg, n, s.width)
				if s.bf16 {
					for i, v := range want {
						want[i] = float64(RoundBF16(float32(v)))
					}
				}
				b.KVWrite(cache.view, x.view, seq.view, pos.view, pages, n, s.width)
				if err := e.checkAll(); err != nil {
					return err
				}
				return Compare("cache", cache.result(b), want, tolExact)
			}})
	}
	return cs
}

// attnDT is the dtypes of a case's attention operands: the K/V caches,
// and q (BF16 only with BF16 caches: the all-bf16 operands that take
// kernels/cuda's tensor-core kernels, attention_flash_tc.cu; the CPU
// backend computes in f32 over the bf16-rounded values), and act, the
// activations between ops (Attention's out; AttentionBackward's out, dout
// and dq): BF16 only beside a BF16 q, where the tensor-core kernels read
// them widened and round each stored one once.
type attnDT struct{ kv, q, act kernels.DType }

// attnDTs are the dtype combinations every attention case runs with.
var attnDTs = []attnDT{
	{kernels.F32, kernels.F32, kernels.F32}, {kernels.BF16, kernels.F32, kernels.F32},
	{kernels.BF16, kernels.BF16, kernels.F32}, {kernels.BF16, kernels.BF16, kernels.BF16},
}

func (dt attnDT) String() string {
	switch {
	case dt.act == kernels.BF16:
		return fmt.Sprintf("kv=%v,q=%v,act=%v", dt.kv, dt.q, dt.act)
	case dt.q == kernels.BF16:
		return fmt.Sprintf("kv=%v,q=%v", dt.kv, dt.q)
	}
	return fmt.Sprintf("kv=%v", dt.kv)
}

// tol is the bound a case with these dtypes is held to.
func (dt attnDT) tol() Tol {
	if dt.kv == kernels.BF16 {
		return tolAttentionBF16
	}
	return tolMatMul
}

// operand allocates q, k or v: with dtype dt, 16-byte aligned when it is
// BF16 q or a cache beside it (the tensor-core kernels copy 16-byte
// chunks), otherwise at the suite's misaligned guard.
func (dt attnDT) operand(e *env, name string, odt kernels.DType, vals []float32) *operand {
	if dt.q == kernels.BF16 {
		return e.floatsAligned(name, odt, vals, true)
	}
	return e.floats(name, odt, vals, true)
}

type attnShape struct {
	name                string
	nHead, nKV, headDim int
	slots, maxLen       int
	toks                []tok
	qScale              float64 // magnitude of q; large values test max-subtraction
	lse                 bool
	paging
}

// attentionCases cover prefill, decode (one token per slot at different
// positions), packed prefill of several slots of different lengths
// (including one continuing after a cached prefix, and tokens in shuffled
// order), GQA ratios 1, 2 and 4, headDim 16, 64, 128 and 256 (cuda's
// scalar kernels, beyond the flash ones' 128), a 300-token
// prefill, scores large enough that exp without max-subtraction overflows,
// the optional lse output, and paged layouts: shuffled blocks of 4, 5 and
// 16 rows with partly used last blocks, and two sequences sharing prompt
// blocks. Cache rows no token may read hold NaN and unused table entries
// −1, so reading past pos[t] or through the wrong block poisons the
// output.
func attentionCases() []Case {
	shuffled := cat(run(1, 0, 6), run(0, 5, 9), run(2, 0, 0))
	for i := range shuffled { // fixed permutation: interleave slots
		j := (i * 7) % len(shuffled)
		shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
	}
	shapes := []attnShape{
		{"single", 1, 1, 16, 1, 1, []tok{{0, 0}}, 1, true, paging{}},
		{"prefill", 4, 4, 16, 1, 16, run(0, 0, 12), 1, false, paging{}},
		{"prefill-gqa2", 4, 2, 64, 2, 20, run(1, 0, 9), 1, true, paging{}},
		{"decode-gqa4", 8, 2, 64, 3, 40, []tok{{0, 17}, {1, 0}, {2, 39}}, 1, true, paging{}},
		{"decode-gqa1", 2, 2, 16, 4, 10, []tok{{3, 9}, {0, 4}, {2, 1}, {1, 0}}, 1, false, paging{}},
		{"packed-gqa2", 4, 2, 64, 3, 12, cat(run(1, 0, 6), run(0, 5, 9), run(2, 0, 0)), 1, true, paging{}},
		{"packed-shuffled-gqa4", 4, 1, 16, 3, 12, shuffled, 1, true, paging{}},
		{"large-scores", 2, 1, 16, 1, 8, run(0, 0, 7), 200, true, paging{}},
		{"headdim128", 2, 1, 128, 2, 33, cat(run(0, 0, 32), run(1, 0, 4)), 1, true, paging{}},
		{"prefill300", 4, 2, 64, 1, 300, run(0, 0, 299), 1, true, paging{}},
		{"decode-gqa4", 8, 2, 64, 3, 40, []tok{{0, 17}, {1, 0}, {2, 39}}, 1, true, paging{block: 16}},
		{"packed-gqa2", 4, 2, 64, 3, 12, cat(run(1, 0, 6), run(0, 5, 9), run(2, 0, 0)), 1, true, paging{block: 4}},
		{"packed-shuffled-gqa4", 4, 1, 16, 3, 12, shuffled, 1, true, paging{block: 5}},
		{"prefill300", 4, 2, 64, 1, 300, run(0, 0, 299), 1, true, paging{block: 16}},
		{"shared-prompt-gqa2", 4, 2, 16, 3, 20, cat(run(0, 0, 10), run(1, 11, 13), []tok{{2, 3}}), 1, true, paging{block: 4, share: 2}},
		{"shared-partial-decode", 2, 1, 16, 2, 12, []tok{{0, 9}, {1, 6}}, 1, true, paging{block: 4, share: 2}},
		{"headdim256", 2, 1, 256, 2, 12, cat(run(0, 0, 4), []tok{{1, 9}}), 1, true, paging{block: 4}},
	}
	var cs []Case
	for _, dt := range attnDTs {
		for i, s := range shapes {
			s, seed := s, uint64(1000+i)
			cs = append(cs, Case{Op: "Attention",
				Name:  fmt.Sprintf("%s,%v,%v,nHead=%d,nKV=%d,headDim=%d,nTok=%d,lse=%v", s.name, s.paging, dt, s.nHead, s.nKV, s.headDim, len(s.toks), s.lse),
				check: func(b kernels.Backend) error { return checkAttention(b, seed, s, dt, attnVar{}) }})
		}
	}
	return cs
}

// checkAttention runs one case with operands of dtypes dt under variant
// av: the reference reads q and the caches as stored (bf16-rounded for
// BF16), and a BF16 case is held to tolAttentionBF16, which allows the
// tensor-core paths' rounding of q and the probabilities. Rows before
// every window that reads them hold NaN, like rows past the positions.
func checkAttention(b kernels.Backend, seed uint64, s attnShape, dt attnDT, av attnVar) error {
	e := newEnv(b, seed)
	defer e.free()
	n := len(s.toks)
	seqv, posv, valid := seqsAndPositions(s.toks, s.slots)
	pg := s.layout(e, s.slots, s.maxLen, valid)
	row := s.nKV * s.headDim
	firsts := av.firsts(seqv, posv, s.slots)
	readable := pg.readableRowsFrom(firsts, valid)
	if av.window > 0 && s.paging.block > 0 {
		pg.unmapBehind(firsts)
	}
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
	q := dt.operand(e, "q", dt.q, e.uniform(n*s.nHead*s.headDim, s.qScale))
	k, v := dt.operand(e, "kCache", dt.kv, kv()), dt.operand(e, "vCache", dt.kv, kv())
	seq, pos := e.ints("seq", seqv), e.ints("pos", posv)
	pages := e.pagesOperand(pg)
	out := e.floats("out", dt.act, nans(n*s.nHead*s.headDim), false)
	var lse *operand
	var lseBuf kernels.Buffer
	if s.lse {
		lse = e.out("lse", nans(n*s.nHead))
		lseBuf = lse.view
	}
	scale := float32(1 / math.Sqrt(float64(s.headDim)))
	variant, ref := av.operands(e, s.nHead)
	wantOut, wantLse := RefAttentionVariant(q.values(), k.values(), v.values(), seqv, posv, pg, n, s.nHead, s.nKV, s.headDim, float64(scale), ref)
	b.Attention(out.view, lseBuf, q.view, k.view, v.view, seq.view, pos.view, pages, n, s.nHead, s.nKV, s.headDim, scale, variant)
	if err := e.checkAll(); err != nil {
		return err
	}
	tol := dt.tol()
	if err := CompareStored("out", dt.act, out.result(b), wantOut, tol); err != nil {
		return err
	}
	if s.lse {
		return Compare("lse", lse.result(b), wantLse, tol)
	}
	return nil
}
