package kerneltest

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

type attnBwdShape struct {
	name                string
	nHead, nKV, headDim int
	slots, maxLen       int
	toks                []tok
	qScale              float64 // magnitude of q; 8 makes the softmax peaked
	accumulate          bool    // dk, dv start non-zero: the op must add
	paging
}

// attentionBackwardCases cover the shapes of the forward cases: a single
// token, prefill, packed slots of different lengths (one continuing after a
// cached prefix, so its prefix positions get key and value gradients from
// later queries), shuffled token order, decode (one query per slot), GQA
// ratios 1, 2 and 4, peaked softmax, and accumulation into non-zero dk and
// dv, and paged layouts (shuffled blocks with partly used last blocks, and
// shared prompt blocks, whose gradient is the sum over the sequences that
// read them, also in blocks of one row as a shared-prompt trace's cache). As in the forward cases, cache rows no token may read hold
// NaN, and their dk, dv must keep their initial value. out and lse are the
// float64 forward rounded to float32, so these cases test the backward
// alone; the "fd" cases use the backend's own forward.
func attentionBackwardCases() []Case {
	shuffled := cat(run(1, 0, 6), run(0, 5, 9), run(2, 0, 0))
	for i := range shuffled {
		j := (i * 7) % len(shuffled)
		shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
	}
	shapes := []attnBwdShape{
		{"single", 1, 1, 16, 1, 1, []tok{{0, 0}}, 1, false, paging{}},
		{"prefill-gqa1", 2, 2, 16, 1, 16, run(0, 0, 12), 1, false, paging{}},
		{"packed-gqa2", 4, 2, 64, 3, 12, cat(run(1, 0, 6), run(0, 5, 9), run(2, 0, 0)), 1, false, paging{}},
		{"packed-shuffled-gqa4", 4, 1, 16, 3, 12, shuffled, 1, true, paging{}},
		{"decode-gqa2", 4, 2, 32, 3, 40, []tok{{0, 17}, {1, 0}, {2, 39}}, 1, true, paging{}},
		{"decode-gqa1", 2, 2, 16, 4, 10, []tok{{3, 9}, {0, 4}, {2, 1}, {1, 0}}, 1, false, paging{}},
		{"peaked-gqa2", 4, 2, 16, 1, 24, run(0, 0, 23), 8, false, paging{}},
		{"headdim128", 2, 1, 128, 2, 33, cat(run(0, 0, 32), run(1, 0, 4)), 1, true, paging{}},
		{"packed-shuffled-gqa4", 4, 1, 16, 3, 12, shuffled, 1, true, paging{block: 5}},
		{"decode-gqa2", 4, 2, 32, 3, 40, []tok{{0, 17}, {1, 0}, {2, 39}}, 1, true, paging{block: 16}},
		{"shared-prompt-gqa2", 4, 2, 16, 3, 20, cat(run(0, 0, 10), run(1, 11, 13), []tok{{2, 3}}), 1, false, paging{block: 4, share: 2}},
		// A shared-prompt training trace's cache: one row a block.
		{"shared-prompt-rows-gqa2", 4, 2, 32, 3, 20, cat(run(0, 0, 10), run(1, 8, 13), []tok{{2, 3}}), 1, true, paging{block: 1, share: 8}},
		{"headdim256-gqa2", 4, 2, 256, 2, 70, cat(run(0, 0, 66), run(1, 0, 4)), 1, true, paging{block: 16}},
	}
	var cs []Case
	for _, dt := range attnDTs {
		for i, s := range shapes {
			if !dt.backwardRuns(s.headDim) {
				continue
			}
			s, seed := s, uint64(2600+i)
			cs = append(cs, trainCase("AttentionBackward",
				fmt.Sprintf("%s,%v,%v,nHead=%d,nKV=%d,headDim=%d,nTok=%d,accumulate=%v", s.name, s.paging, dt, s.nHead, s.nKV, s.headDim, len(s.toks), s.accumulate),
				func(b kernels.Backend, tb kernels.TrainOps) error {
					return checkAttentionBackward(b, tb, seed, s, dt, attnVar{})
				}))
		}
	}
	fd := []attnBwdShape{
		{"packed-gqa2", 4, 2, 16, 3, 12, cat(run(1, 0, 6), run(0, 5, 9), run(2, 0, 2)), 1, false, paging{}},
		{"decode-gqa1", 2, 2, 16, 4, 10, []tok{{3, 9}, {0, 4}, {2, 1}, {1, 0}}, 1, false, paging{}},
		{"decode-gqa2", 4, 2, 16, 3, 20, []tok{{0, 17}, {1, 0}, {2, 6}}, 1, false, paging{}},
		{"packed-gqa2", 4, 2, 16, 3, 12, cat(run(1, 0, 6), run(0, 5, 9), run(2, 0, 2)), 1, false, paging{block: 4}},
	}
	for i, s := range fd {
		s, seed := s, uint64(2650+i)
		cs = append(cs, trainCase("AttentionBackward",
			fmt.Sprintf("fd,%s,%v,nHead=%d,nKV=%d,headDim=%d,nTok=%d", s.name, s.paging, s.nHead, s.nKV, s.headDim, len(s.toks)),
			func(b kernels.Backend, tb kernels.TrainOps) error {
				return checkAttentionBackwardFD(b, tb, seed, s, attnVar{})
			}))
	}
	return cs
}

// backwardRuns reports whether AttentionBackward takes these dtypes at
// headDim: a BF16 cache with an f32 q above head dim 128 has no kernel on
// kernels/cuda (the scalar attention_backward.cu reads f32 caches only).
func (dt attnDT) backwardRuns(headDim int) bool {
	return headDim <= 128 || dt.kv == dt.q
}

// attnOperands are the inputs shared by the analytic and fd cases.
type attnOperands struct {
	seqv, posv []int32
	pg         Pages
	kv, vv     []float32 // cache contents, NaN where unreadable
	readable   func(i int) bool
	q, k, v    *operand
	seq, pos   *operand
	pages      kernels.KVPages
	nTok, qLen int
	cacheLen   int
	scale      float32
	scale64    float64
	variant    kernels.AttentionVariant
	ref        RefVariant
}

func newAttnOperands(e *env, s attnBwdShape, av attnVar) *attnOperands {
	return newAttnOperandsDT(e, s, attnDT{kernels.F32, kernels.F32, kernels.F32}, av)
}

// newAttnOperandsDT is newAttnOperands with q and caches of dtypes dt.
// Rows before every window that reads them are unreadable too.
func newAttnOperandsDT(e *env, s attnBwdShape, dt attnDT, av attnVar) *attnOperands {
	a := &attnOperands{nTok: len(s.toks)}
	var valid []int32
	a.seqv, a.posv, valid = seqsAndPositions(s.toks, s.slots)
	a.pg = s.layout(e, s.slots, s.maxLen, valid)
	row := s.nKV * s.headDim
	a.cacheLen = a.pg.Rows() * row
	rows := a.pg.readableRowsFrom(av.firsts(a.seqv, a.posv, s.slots), valid)
	a.readable = func(i int) bool { return rows[i/row] }
	kv := func() []float32 {
		v := e.uniform(a.cacheLen, 1)
		for i := range v {
			if !a.readable(i) {
				v[i] = float32(math.NaN())
			}
		}
		return v
	}
	a.qLen = a.nTok * s.nHead * s.headDim
	a.q = dt.operand(e, "q", dt.q, e.uniform(a.qLen, s.qScale))
	a.kv, a.vv = kv(), kv()
	a.k, a.v = dt.operand(e, "kCache", dt.kv, a.kv), dt.operand(e, "vCache", dt.kv, a.vv)
	a.seq, a.pos = e.ints("seq", a.seqv), e.ints("pos", a.posv)
	a.pages = e.pagesOperand(a.pg)
	a.scale = float32(1 / math.Sqrt(float64(s.headDim)))
	a.scale64 = float64(a.scale)
	a.variant, a.ref = av.operands(e, s.nHead)
	return a
}

// checkAttentionBackward runs one case with q and caches of dtypes dt;
// BF16 cases are held to tolAttentionBF16 (see checkAttention).
func checkAttentionBackward(b kernels.Backend, tb kernels.TrainOps, seed uint64, s attnBwdShape, dt attnDT, av attnVar) error {
	e := newEnv(b, seed)
	defer e.free()
	a := newAttnOperandsDT(e, s, dt, av)
	tol := dt.tol()
	outv, lsev := RefAttentionVariant(a.q.values(), a.k.values(), a.v.values(), a.seqv, a.posv, a.pg, a.nTok, s.nHead, s.nKV, s.headDim, a.scale64, a.ref)
	out, lse := e.floats("out", dt.act, f32s(outv), true), e.in("lse", f32s(lsev))
	dout := e.floats("dout", dt.act, e.uniform(a.qLen, 1), true)
	zeros := make([]float32, a.cacheLen)
	dkInit, dvInit := zeros, zeros
	if s.accumulate {
		dkInit, dvInit = e.uniform(a.cacheLen, 1), e.uniform(a.cacheLen, 1)
	}
	dq, dk, dv := e.floats("dq", dt.act, nans(a.qLen), false), e.out("dk", dkInit), e.out("dv", dvInit)
	wantQ, wantK, wantV := RefAttentionBackwardVariant(dout.values(), a.q.values(), a.k.values(), a.v.values(), a.seqv, a.posv, a.pg, a.nTok, s.nHead, s.nKV, s.headDim, a.scale64, a.ref)
	wantK, wantV = RefAdd(wantK, dk.values()), RefAdd(wantV, dv.values())
	tb.AttentionBackward(dq.view, dk.view, dv.view, dout.view, out.view, lse.view, a.q.view, a.k.view, a.v.view, a.seq.view, a.pos.view, a.pages,
		a.nTok, s.nHead, s.nKV, s.headDim, a.scale, a.variant)
	if err := e.checkAll(); err != nil {
		return err
	}
	if err := CompareStored("dq", dt.act, dq.result(b), wantQ, tol); err != nil {
		return err
	}
	if err := Compare("dk", dk.result(b), wantK, tol); err != nil {
		return err
	}
	return Compare("dv", dv.result(b), wantV, tol)
}

// checkAttentionBackwardFD differentiates L = Σ r ⊙ Attention(q, k, v) on
// the backend along random directions of q and of the readable part of
// each cache.
func checkAttentionBackwardFD(b kernels.Backend, tb kernels.TrainOps, seed uint64, s attnBwdShape, av attnVar) error {
	e := newEnv(b, seed)
	defer e.free()
	a := newAttnOperands(e, s, av)
	r := e.uniform(a.qLen, 1)
	out, lse := e.out("out", nans(a.qLen)), e.out("lse", nans(a.nTok*s.nHead))
	dout := e.in("dout", r)
	dq, dk, dv := e.out("dq", nans(a.qLen)), e.out("dk", make([]float32, a.cacheLen)), e.out("dv", make([]float32, a.cacheLen))
	attend := func(lseBuf kernels.Buffer) {
		b.Attention(out.view, lseBuf, a.q.view, a.k.view, a.v.view, a.seq.view, a.pos.view, a.pages, a.nTok, s.nHead, s.nKV, s.headDim, a.scale, a.variant)
	}
	attend(lse.view)
	tb.AttentionBackward(dq.view, dk.view, dv.view, dout.view, out.view, lse.view, a.q.view, a.k.view, a.v.view, a.seq.view, a.pos.view, a.pages,
		a.nTok, s.nHead, s.nKV, s.headDim, a.scale, a.variant)
	if err := e.checkAll(); err != nil {
		return err
	}
	qv := make([]float32, a.qLen)
	copy(qv, a.q.f[a.q.g():])
	unreadable := func(i int) bool { return !a.readable(i) }
	loss := func() (float64, float64, error) {
		attend(nil)
		l, labs := dotLoss(r, out.result(b))
		return l, labs, b.Sync()
	}
	return checkFD(e, 1e-2, []fdInput{
		{op: a.q, x: qv, grad: dq.result(b)},
		{op: a.k, x: a.kv, grad: dk.result(b), frozen: unreadable},
		{op: a.v, x: a.vv, grad: dv.result(b), frozen: unreadable},
	}, loss)
}
