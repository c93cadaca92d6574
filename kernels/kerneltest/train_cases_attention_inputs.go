package kerneltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// attentionInputsBackwardShape is one shape of the AttentionInputsBackward
// cases; rotary 0 means rotaryDim = headDim.
type attentionInputsBackwardShape struct {
	nHead, nKV, headDim int
	norm                bool
	w                   kernels.DType
	paging
	gated  bool
	rotary int
}

func (s attentionInputsBackwardShape) rotaryDim() int {
	if s.rotary == 0 {
		return s.headDim
	}
	return s.rotary
}

func (s attentionInputsBackwardShape) String() string {
	name := fmt.Sprintf("%v,nHead=%d,nKV=%d,headDim=%d,norm=%v,w=%v", s.paging, s.nHead, s.nKV, s.headDim, s.norm, s.w)
	if s.gated || s.rotaryDim() != s.headDim {
		name += fmt.Sprintf(",gated=%v,rotaryDim=%d", s.gated, s.rotaryDim())
	}
	return name
}

// qWidth is the width of the q part of a qkv row.
func (s attentionInputsBackwardShape) qWidth() int {
	if s.gated {
		return 2 * s.nHead * s.headDim
	}
	return s.nHead * s.headDim
}

// attentionInputsBackwardCases: the shapes of attentionInputsCases (with
// and without q/k norm, f32 and bf16 norm weights, contiguous and paged
// caches, gated and partial rotary); the cache gradients hold values in
// every row, so reading a row other than the token's own is caught, and
// dqkv starts as NaN. The "fd" cases check the backward against finite
// differences of the backend's own AttentionInputs. Six shapes run again
// over BF16 activations (a bf16 model's trace between ops: dqkv, dq,
// dgate, qPre and kPre all in bf16), and a few with some of them only
// (the kernels take each from its own bit): BF16 inputs are the
// reference's inputs as stored, a BF16 dqkv must be the bf16 rounding of
// the reference within the f32 bound, and bf16 values.
func attentionInputsBackwardCases() []Case {
	shapes := []attentionInputsBackwardShape{
		{4, 2, 32, true, kernels.F32, paging{block: 16}, false, 0},
		{2, 1, 16, false, kernels.F32, paging{}, false, 0},
		{4, 1, 64, true, kernels.BF16, paging{block: 5}, false, 0},
		{8, 2, 128, false, kernels.F32, paging{block: 4}, false, 0},
		{4, 2, 256, true, kernels.BF16, paging{block: 16}, true, 64},
		{4, 1, 64, true, kernels.F32, paging{block: 5}, true, 16},
		{2, 1, 16, false, kernels.F32, paging{}, true, 0},
		{8, 2, 128, false, kernels.F32, paging{block: 4}, false, 32},
		{2, 2, 34, true, kernels.F32, paging{}, true, 2},
	}
	var cs []Case
	for i, s := range shapes {
		cs = append(cs, attentionInputsBackwardCase(s, uint64(5700+i), attentionInputsBackwardActs{}))
	}
	bf := kernels.BF16
	all := attentionInputsBackwardActs{bf, bf, bf, bf, bf}
	for _, c := range []struct {
		shape int
		acts  attentionInputsBackwardActs
	}{
		{0, all}, {1, all}, {4, all}, {5, all}, {6, all}, {8, all},
		{0, attentionInputsBackwardActs{dqkv: bf}}, {5, attentionInputsBackwardActs{dqkv: bf}},
		{0, attentionInputsBackwardActs{dqkv: bf, kPre: bf}},
		{5, attentionInputsBackwardActs{dq: bf, dgate: bf, qPre: bf}},
	} {
		cs = append(cs, attentionInputsBackwardCase(shapes[c.shape], uint64(5720+c.shape), c.acts))
	}
	for i, s := range []attentionInputsBackwardShape{
		{4, 2, 32, true, kernels.F32, paging{block: 5}, true, 8},
		{2, 1, 16, false, kernels.F32, paging{}, false, 0},
		{2, 2, 64, true, kernels.F32, paging{block: 4}, false, 16},
	} {
		s, seed := s, uint64(5750+i)
		cs = append(cs, trainCase("AttentionInputsBackward", "fd,"+s.String(), func(b kernels.Backend, tb kernels.TrainOps) error {
			return checkAttentionInputsFD(b, tb, seed, s)
		}))
	}
	return cs
}

// checkAttentionInputsFD runs AttentionInputs on random qkv (with biases
// and, per s, norms), then its backward with random dq, dgate and cache
// gradients r, and compares dqkv with finite differences of L = Σ r ⊙
// (q, gate, kCache, vCache) computed by the backend's forward. Cache rows
// no token writes add a constant to L.
func checkAttentionInputsFD(b kernels.Backend, tb kernels.TrainOps, seed uint64, s attentionInputsBackwardShape) error {
	e := newEnv(b, seed)
	defer e.free()
	toks := cat(run(0, 0, 3), run(1, 2, 2), run(2, 5, 8))
	const seqs, maxLen = 3, 9
	n, hd, rot := len(toks), s.headDim, s.rotaryDim()
	qd, kd, qw := s.nHead*hd, s.nKV*hd, s.qWidth()
	seqv, posv, valid := seqsAndPositions(toks, seqs)
	pg := s.layout(e, seqs, maxLen, valid)
	qkvv := e.uniform(n*(qw+2*kd), 2)
	qkv := e.in("qkv", qkvv)
	kCache, vCache := e.out("kCache", e.uniform(pg.Rows()*kd, 1)), e.out("vCache", e.uniform(pg.Rows()*kd, 1))
	q := e.out("q", nans(n*qd))
	qb, kb, vb := e.in("qBias", e.uniform(qw, 1)), e.in("kBias", e.uniform(kd, 1)), e.in("vBias", e.uniform(kd, 1))
	var gate, qn, kn, rq, rk, dgate *operand
	if s.norm {
		qn, kn = e.in("qNorm", e.uniform(hd, 2)), e.in("kNorm", e.uniform(hd, 2))
		rq, rk = e.out("rstdQ", nans(n*s.nHead)), e.out("rstdK", nans(n*s.nKV))
	}
	qPre, kPre := e.out("qPre", nans(n*qd)), e.out("kPre", nans(n*kd))
	rqv, rkc, rvc := e.uniform(n*qd, 1), e.uniform(pg.Rows()*kd, 1), e.uniform(pg.Rows()*kd, 1)
	var rgv []float32
	if s.gated {
		gate = e.out("gate", nans(n*qd))
		rgv = e.uniform(n*qd, 1)
		dgate = e.in("dgate", rgv)
	}
	dq, dkC, dvC := e.in("dq", rqv), e.in("dkCache", rkc), e.in("dvCache", rvc)
	posOp, seqOp := e.ints("pos", posv), e.ints("seq", seqv)
	_, fv := ropeInputs(e, 1, rot, 1e4)
	inv := e.in("invFreq", fv)
	pages := e.pagesOperand(pg)
	d := e.out("dqkv", nans(n*(qw+2*kd)))
	forward := func() {
		b.AttentionInputs(q.view, view(gate), qPre.view, kPre.view, view(rq), view(rk), kCache.view, vCache.view, qkv.view,
			qb.view, kb.view, vb.view, view(qn), view(kn), inv.view, seqOp.view, posOp.view, pages, n, s.nHead, s.nKV, hd, rot, 1e-6)
	}
	forward()
	tb.AttentionInputsBackward(d.view, dq.view, view(dgate), dkC.view, dvC.view, qPre.view, kPre.view, view(rq), view(rk), view(qn), view(kn),
		inv.view, seqOp.view, posOp.view, pages, n, s.nHead, s.nKV, hd, rot)
	if err := e.checkAll(); err != nil {
		return err
	}
	loss := func() (float64, float64, error) {
		forward()
		l, labs := dotLoss(rqv, q.result(b))
		for _, p := range []struct {
			r []float32
			o *operand
		}{{rkc, kCache}, {rvc, vCache}, {rgv, gate}} {
			if p.o != nil {
				lp, ap := dotLoss(p.r, p.o.result(b))
				l, labs = l+lp, labs+ap
			}
		}
		return l, labs, b.Sync()
	}
	return checkFD(e, 1e-2, []fdInput{{op: qkv, x: qkvv, grad: d.result(b)}}, loss)
}

// attentionInputsBackwardActs are the dtypes of AttentionInputsBackward's
// activation operands (F32 unless set).
type attentionInputsBackwardActs struct{ dqkv, dq, dgate, qPre, kPre kernels.DType }

// attentionInputsBackwardCase runs AttentionInputsBackward on random
// gradients (and, with the norm, random qPre, kPre and their rstd) and
// compares dqkv with RefAttentionInputsBackward.
func attentionInputsBackwardCase(s attentionInputsBackwardShape, seed uint64, acts attentionInputsBackwardActs) Case {
	toks := cat(run(0, 0, 5), run(1, 3, 4), run(2, 9, 9))
	const seqs, maxLen = 3, 12
	// Operands the shape does not have take no dtype.
	if !s.gated {
		acts.dgate = kernels.F32
	}
	if !s.norm {
		acts.qPre, acts.kPre = kernels.F32, kernels.F32
	}
	name := s.String() + bf16Names([]string{"dqkv", "dq", "dgate", "qPre", "kPre"}, []kernels.DType{acts.dqkv, acts.dq, acts.dgate, acts.qPre, acts.kPre})
	return trainCase("AttentionInputsBackward", name, func(b kernels.Backend, tb kernels.TrainOps) error {
		e := newEnv(b, seed)
		defer e.free()
		n, hd, rot := len(toks), s.headDim, s.rotaryDim()
		qd, kd := s.nHead*hd, s.nKV*hd
		seqv, posv, valid := seqsAndPositions(toks, seqs)
		pg := s.layout(e, seqs, maxLen, valid)
		dq := e.floats("dq", acts.dq, e.uniform(n*qd, 1), true)
		dkC, dvC := e.in("dkCache", e.uniform(pg.Rows()*kd, 1)), e.in("dvCache", e.uniform(pg.Rows()*kd, 1))
		var dgate, qPre, kPre, rq, rk, qn, kn *operand
		if s.norm {
			qPre, kPre = e.floats("qPre", acts.qPre, e.uniform(n*qd, 2), true), e.floats("kPre", acts.kPre, e.uniform(n*kd, 2), true)
			_, rqv := RefRMSNorm(qPre.values(), make([]float64, hd), n*s.nHead, hd, 1e-6)
			_, rkv := RefRMSNorm(kPre.values(), make([]float64, hd), n*s.nKV, hd, 1e-6)
			rq, rk = e.in("rstdQ", f32s(rqv)), e.in("rstdK", f32s(rkv))
			qn, kn = e.floats("qNorm", s.w, e.uniform(hd, 2), true), e.floats("kNorm", s.w, e.uniform(hd, 2), true)
		}
		posOp, seqOp := e.ints("pos", posv), e.ints("seq", seqv)
		_, fv := ropeInputs(e, 1, rot, 1e6)
		inv := e.in("invFreq", fv)
		if s.gated {
			dgate = e.floats("dgate", acts.dgate, e.uniform(n*qd, 1), true)
		}
		pages := e.pagesOperand(pg)
		d := e.floats("dqkv", acts.dqkv, nans(n*(s.qWidth()+2*kd)), false)
		vals := func(o *operand) []float64 {
			if o == nil {
				return nil
			}
			return o.values()
		}
		want := RefAttentionInputsBackward(dq.values(), vals(dgate), dkC.values(), dvC.values(), vals(qPre), vals(kPre), vals(rq), vals(rk), vals(qn), vals(kn),
			fv, seqv, posv, pg, n, s.nHead, s.nKV, hd, rot)
		tb.AttentionInputsBackward(d.view, dq.view, view(dgate), dkC.view, dvC.view, view(qPre), view(kPre), view(rq), view(rk), view(qn), view(kn),
			inv.view, seqOp.view, posOp.view, pages, n, s.nHead, s.nKV, hd, rot)
		if err := e.checkAll(); err != nil {
			return err
		}
		if acts.dqkv == kernels.BF16 {
			return compareBF16Stored("dqkv", d.result(b), want, tolReduction)
		}
		return Compare("dqkv", d.result(b), want, tolReduction)
	})
}
