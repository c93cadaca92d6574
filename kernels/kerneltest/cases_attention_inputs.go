package kerneltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// attentionInputsShape is one shape of the AttentionInputs cases.
type attentionInputsShape struct {
	nHead, nKV, headDim int
	norm, bias          bool
	w                   kernels.DType
	train               bool
	paging
	gated  bool
	rotary int // rotaryDim; 0: headDim
}

func (s attentionInputsShape) rotaryDim() int {
	if s.rotary == 0 {
		return s.headDim
	}
	return s.rotary
}

// attentionInputsActs are the dtypes of AttentionInputs' activation
// operands (F32 unless set): qkv, and the outputs gate, qPre and kPre.
type attentionInputsActs struct{ qkv, gate, qPre, kPre kernels.DType }

// String names the BF16 ones ("" when none is).
func (a attentionInputsActs) String() string {
	return bf16Names([]string{"qkv", "gate", "qPre", "kPre"}, []kernels.DType{a.qkv, a.gate, a.qPre, a.kPre})
}

// bf16Names is ",a,b=bf16" for the names whose dtype is BF16, or "".
func bf16Names(names []string, dts []kernels.DType) string {
	s := ""
	for i, dt := range dts {
		if dt == kernels.BF16 {
			s += "," + names[i]
		}
	}
	if s == "" {
		return ""
	}
	return s + "=bf16"
}

// attentionInputsCases cover the architectures' shapes — Qwen3 (q/k
// norm, no bias), Qwen2 (bias, no norm), Llama (neither), Qwen3.5's
// gated attention (the gate in the q part, partial rotary over a quarter
// of headDim 256) — bf16 and f32 weights, GQA ratios 2 and 4, headDim 16
// to 256, full and partial rotary, gated with and without a q bias,
// contiguous and paged caches (shuffled blocks, partial last blocks),
// prefill and decode tokens in one call, f32 and bf16 caches (the
// sampler's on a GPU), and the optional training outputs (qPre, kPre,
// rstdQ, rstdK). Every shape with a bf16 cache runs a second time with a
// bf16 q (a bf16 model's training trace: kernels.BF16AttentionHeadDim),
// which must be the reference's q rounded to bf16, as the caches. Cache
// rows no token writes hold values that must survive. The BF16
// activation cases follow (attentionInputsBF16Cases).
func attentionInputsCases() []Case {
	shapes := []attentionInputsShape{
		{4, 2, 32, true, false, kernels.F32, true, paging{block: 16}, false, 0},
		{4, 2, 32, true, false, kernels.BF16, false, paging{}, false, 0},
		{4, 2, 32, true, false, kernels.BF16, false, paging{block: 16, bf16: true}, false, 0},
		{2, 1, 16, false, true, kernels.BF16, true, paging{}, false, 0},
		{8, 2, 128, false, false, kernels.F32, false, paging{block: 4}, false, 0},
		{2, 1, 16, false, true, kernels.F32, false, paging{block: 4, bf16: true}, false, 0},
		{4, 1, 64, true, true, kernels.BF16, true, paging{block: 5}, false, 0},
		{4, 2, 256, true, false, kernels.BF16, true, paging{block: 16}, true, 64},
		{4, 2, 256, true, false, kernels.BF16, false, paging{block: 16, bf16: true}, true, 64},
		{4, 1, 64, true, true, kernels.F32, true, paging{block: 5}, true, 16},
		{2, 1, 16, false, true, kernels.BF16, false, paging{}, true, 0},
		{8, 2, 128, false, false, kernels.F32, false, paging{block: 4}, false, 32},
		{2, 2, 34, true, false, kernels.F32, true, paging{}, true, 2},
		// A bf16 model's training trace: q/k norm, qPre and kPre, a
		// contiguous cache and the shared-prompt trace's one-row blocks.
		{4, 2, 32, true, false, kernels.BF16, true, paging{bf16: true}, false, 0},
		{4, 2, 16, false, true, kernels.BF16, true, paging{block: 1, bf16: true}, false, 0},
		{4, 2, 256, true, false, kernels.BF16, true, paging{bf16: true}, true, 64},
	}
	var cs []Case
	for i, s := range shapes {
		qDTs := []kernels.DType{kernels.F32}
		if s.paging.bf16 && kernels.BF16AttentionHeadDim(s.headDim) {
			qDTs = append(qDTs, kernels.BF16)
		}
		for _, qdt := range qDTs {
			cs = append(cs, attentionInputsCase(s, uint64(4900+i), qdt, attentionInputsActs{}))
		}
	}
	return append(cs, attentionInputsBF16Cases()...)
}

// attentionInputsBF16Cases run AttentionInputs over BF16 activations (a
// bf16 model's trace between ops): all four of qkv, gate, qPre, kPre in
// bf16 over shapes with and without q/k norm, with and without the gate
// and biases, partial rotary, f32 and bf16 caches (then with a bf16 q);
// and each operand's dtype on its own over a few of them (the kernels
// take each from its own bit). A BF16 qkv is the reference's input as
// stored; BF16 outputs must be the bf16 rounding of the reference
// within the f32 bound, and bf16 values (compareBF16Stored).
func attentionInputsBF16Cases() []Case {
	bf := kernels.BF16
	all := attentionInputsActs{bf, bf, bf, bf}
	shapes := []struct {
		attentionInputsShape
		acts []attentionInputsActs
	}{
		{attentionInputsShape{4, 1, 64, true, true, kernels.BF16, true, paging{block: 5}, false, 0},
			[]attentionInputsActs{all, {qkv: bf, kPre: bf}}},
		{attentionInputsShape{4, 1, 64, true, true, kernels.F32, true, paging{block: 5}, true, 16},
			[]attentionInputsActs{all, {qkv: bf}, {gate: bf, qPre: bf}}},
		{attentionInputsShape{2, 1, 16, false, true, kernels.BF16, true, paging{}, false, 0},
			[]attentionInputsActs{all, {qkv: bf}}},
		{attentionInputsShape{2, 1, 16, false, true, kernels.F32, true, paging{block: 4}, true, 0},
			[]attentionInputsActs{all}},
		{attentionInputsShape{2, 2, 34, true, false, kernels.F32, true, paging{}, true, 2},
			[]attentionInputsActs{all, {gate: bf, qPre: bf}}},
		{attentionInputsShape{4, 2, 32, true, false, kernels.BF16, true, paging{bf16: true}, false, 0},
			[]attentionInputsActs{all}},
		{attentionInputsShape{4, 2, 16, false, true, kernels.BF16, true, paging{block: 1, bf16: true}, false, 0},
			[]attentionInputsActs{all}},
		{attentionInputsShape{4, 2, 256, true, false, kernels.BF16, true, paging{bf16: true}, true, 64},
			[]attentionInputsActs{all}},
	}
	var cs []Case
	for i, s := range shapes {
		qdt := kernels.F32
		if s.paging.bf16 {
			qdt = kernels.BF16
		}
		for j, a := range s.acts {
			cs = append(cs, attentionInputsCase(s.attentionInputsShape, uint64(4950+10*i+j), qdt, a))
		}
	}
	return cs
}

// attentionInputsCase runs AttentionInputs on random qkv (caches holding
// values elsewhere, outputs NaN) and compares every output with
// RefAttentionInputs.
func attentionInputsCase(s attentionInputsShape, seed uint64, qdt kernels.DType, acts attentionInputsActs) Case {
	toks := cat(run(0, 0, 5), run(1, 3, 4), run(2, 9, 9))
	const seqs, maxLen = 3, 12
	rot := s.rotaryDim()
	name := fmt.Sprintf("%v,nHead=%d,nKV=%d,headDim=%d,norm=%v,bias=%v,w=%v,train=%v", s.paging, s.nHead, s.nKV, s.headDim, s.norm, s.bias, s.w, s.train)
	if s.gated || rot != s.headDim {
		name += fmt.Sprintf(",gated=%v,rotaryDim=%d", s.gated, rot)
	}
	if qdt == kernels.BF16 {
		name += ",q=bf16"
	}
	// Operands the shape does not have take no dtype.
	if !s.gated {
		acts.gate = kernels.F32
	}
	if !s.train {
		acts.qPre, acts.kPre = kernels.F32, kernels.F32
	}
	name += acts.String()
	return Case{Op: "AttentionInputs", Name: name, check: func(b kernels.Backend) error {
		e := newEnv(b, seed)
		defer e.free()
		n, hd := len(toks), s.headDim
		qd, kd := s.nHead*hd, s.nKV*hd
		qw := qd
		if s.gated {
			qw = 2 * qd
		}
		seqv, posv, valid := seqsAndPositions(toks, seqs)
		pg := s.layout(e, seqs, maxLen, valid)
		qkv := e.floats("qkv", acts.qkv, e.uniform(n*(qw+2*kd), 2), true)
		kCache := e.floats("kCache", s.cacheDType(), e.uniform(pg.Rows()*kd, 1), false)
		vCache := e.floats("vCache", s.cacheDType(), e.uniform(pg.Rows()*kd, 1), false)
		q := e.floatsAligned("q", qdt, nans(n*qd), false)
		var gate, qb, kb, vb, qn, kn, qPre, kPre, rq, rk *operand
		if s.gated {
			gate = e.floats("gate", acts.gate, nans(n*qd), false)
		}
		if s.bias {
			qb, kb, vb = e.floats("qBias", s.w, e.uniform(qw, 1), true), e.floats("kBias", s.w, e.uniform(kd, 1), true), e.floats("vBias", s.w, e.uniform(kd, 1), true)
		}
		if s.norm {
			qn, kn = e.floats("qNorm", s.w, e.uniform(hd, 2), true), e.floats("kNorm", s.w, e.uniform(hd, 2), true)
		}
		if s.train {
			qPre, kPre = e.floats("qPre", acts.qPre, nans(n*qd), false), e.floats("kPre", acts.kPre, nans(n*kd), false)
			if s.norm {
				rq, rk = e.out("rstdQ", nans(n*s.nHead)), e.out("rstdK", nans(n*s.nKV))
			}
		}
		posOp, seqOp := e.ints("pos", posv), e.ints("seq", seqv)
		_, fv := ropeInputs(e, 1, rot, 1e6)
		inv := e.in("invFreq", fv)
		pages := e.pagesOperand(pg)
		vals := func(o *operand) []float64 {
			if o == nil {
				return nil
			}
			return o.values()
		}
		wq, wg, wk, wv, wqPre, wkPre, wrq, wrk := RefAttentionInputs(qkv.values(), kCache.values(), vCache.values(), vals(qb), vals(kb), vals(vb),
			vals(qn), vals(kn), fv, seqv, posv, pg, n, s.nHead, s.nKV, hd, rot, s.gated, 1e-6)
		b.AttentionInputs(q.view, view(gate), view(qPre), view(kPre), view(rq), view(rk), kCache.view, vCache.view, qkv.view,
			view(qb), view(kb), view(vb), view(qn), view(kn), inv.view, seqOp.view, posOp.view, pages, n, s.nHead, s.nKV, hd, rot, 1e-6)
		if err := e.checkAll(); err != nil {
			return err
		}
		for _, c := range []struct {
			o    *operand
			want []float64
			tol  Tol
		}{{q, wq, tolReduction}, {gate, wg, tolRounded}, {kCache, wk, tolReduction}, {vCache, wv, tolRounded},
			{qPre, wqPre, tolRounded}, {kPre, wkPre, tolRounded}, {rq, wrq, tolReduction}, {rk, wrk, tolReduction}} {
			if c.o == nil {
				continue
			}
			compare := Compare
			if c.o.dt == kernels.BF16 {
				compare = compareBF16Stored
			}
			if err := compare(c.o.name, c.o.result(b), c.want, c.tol); err != nil {
				return err
			}
		}
		return nil
	}}
}
