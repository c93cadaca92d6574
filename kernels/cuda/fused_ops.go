package cuda

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// The fused ops (kernels.FusedOps, fused.cu), in the pattern of ops.go.

// optBufOf is optBuf for an optional operand of one of the dtypes dts.
func (b *Backend) optBufOf(op, name string, x kernels.Buffer, n int, dts ...kernels.DType) *buffer {
	if x == nil {
		return &buffer{owner: b}
	}
	return b.buf(op, name, x, n, dts...)
}

// outputs checks the f32 output and its bf16 copy of a fused op: either
// may be nil, not both.
func (b *Backend) outputs(op string, out, outBF16 kernels.Buffer, n int) (o, c *buffer) {
	if out == nil && outBF16 == nil {
		panic(fmt.Sprintf("cuda: %s: out and outBF16 are both nil", op))
	}
	return b.optBuf(op, "out", out, n), b.optBufOf(op, "outBF16", outBF16, n, kernels.BF16)
}

// bf16Suffix is suffix when x is BF16, "" otherwise: the part of a kernel's
// name that says which of its operands are bf16.
func bf16Suffix(x *buffer, suffix string) string {
	if x.dt == kernels.BF16 {
		return suffix
	}
	return ""
}

func (b *Backend) AddRMSNorm(sum, out, outBF16, rstd, x, r, w kernels.Buffer, rows, dim int, eps float32) {
	const op = "AddRMSNorm"
	positive(op, rows, dim)
	i32(op, rows*dim)
	if (r == nil) != (sum == nil) {
		panic(fmt.Sprintf("cuda: %s: sum and r must both be set or both nil", op))
	}
	n := rows * dim
	s := b.optBuf(op, "sum", sum, n)
	o, c := b.outputs(op, out, outBF16, n)
	rs := b.optBuf(op, "rstd", rstd, rows)
	xx := b.buf(op, "x", x, n, kernels.F32)
	rr := &buffer{owner: b}
	if r != nil {
		rr = b.buf(op, "r", r, n, kernels.F32, kernels.BF16)
	}
	ww := b.buf(op, "w", w, dim, kernels.F32, kernels.BF16)
	if !usable(s, o, c, rs, xx, rr, ww) {
		return
	}
	name := "add_rmsnorm_f32"
	if ww.dt == kernels.BF16 {
		name = "add_rmsnorm_wbf16"
	}
	name += bf16Suffix(rr, "_rbf16")
	b.launch(name, D1(rows), D1(rowBlock), 0, s.ptr, o.ptr, c.ptr, rs.ptr, xx.ptr, rr.ptr, ww.ptr, int32(rows), int32(dim), eps)
}

func (b *Backend) SwiGLURows(out, outBF16, gateUp kernels.Buffer, rows, width int) {
	const op = "SwiGLURows"
	positive(op, rows, width)
	i32(op, 2*rows*width)
	o, c := b.outputs(op, out, outBF16, rows*width)
	gu := b.buf(op, "gateUp", gateUp, 2*rows*width, kernels.F32, kernels.BF16)
	if !usable(o, c, gu) {
		return
	}
	name := "swiglu_rows_f32"
	if gu.dt == kernels.BF16 {
		name = "swiglu_rows_bf16"
	}
	b.elementwise(name, rows*width, o.ptr, c.ptr, gu.ptr, int32(rows), int32(width))
}

func (b *Backend) SwiGLURowsBackward(dGateUp, dy, gateUp kernels.Buffer, rows, width int) {
	const op = "SwiGLURowsBackward"
	positive(op, rows, width)
	i32(op, 2*rows*width)
	d := b.buf(op, "dGateUp", dGateUp, 2*rows*width, kernels.F32, kernels.BF16)
	y := b.buf(op, "dy", dy, rows*width, kernels.F32, kernels.BF16)
	gu := b.buf(op, "gateUp", gateUp, 2*rows*width, kernels.F32, kernels.BF16)
	if !usable(d, y, gu) {
		return
	}
	name := "swiglu_rows_backward_f32" + bf16Suffix(d, "_dbf16") + bf16Suffix(y, "_dybf16") + bf16Suffix(gu, "_gubf16")
	b.elementwise(name, rows*width, d.ptr, y.ptr, gu.ptr, int32(rows), int32(width))
}

// attentionInputsShape checks the head shape shared by AttentionInputs and
// its backward: even dims, rotaryDim within the head, and a grid of at
// most 65535 heads in y.
func attentionInputsShape(op string, nHead, nKV, headDim, rotaryDim int) {
	if headDim%2 != 0 || rotaryDim%2 != 0 || rotaryDim <= 0 || rotaryDim > headDim {
		panic(fmt.Sprintf("cuda: %s: headDim %d, rotaryDim %d: want both even and 0 < rotaryDim ≤ headDim", op, headDim, rotaryDim))
	}
	if nHead+2*nKV > 65535 {
		panic(fmt.Sprintf("cuda: %s: %d heads exceed the grid's y limit 65535", op, nHead+2*nKV))
	}
}

func (b *Backend) AttentionInputs(q, gate, qPre, kPre, rstdQ, rstdK, kCache, vCache, qkv, qBias, kBias, vBias, qNorm, kNorm, invFreq, seq, pos kernels.Buffer,
	pages kernels.KVPages, nTok, nHead, nKV, headDim, rotaryDim int, eps float32) {
	const op = "AttentionInputs"
	positive(op, nTok, nHead, nKV, headDim)
	qd, kd := nHead*headDim, nKV*headDim
	qw := qd // the q part of a qkv row: with the gate, query | gate per head
	if gate != nil {
		qw = 2 * qd
	}
	i32(op, nTok*(qw+2*kd))
	attentionInputsShape(op, nHead, nKV, headDim, rotaryDim)
	if (qNorm == nil) != (kNorm == nil) {
		panic(fmt.Sprintf("cuda: %s: qNorm and kNorm must both be set or both nil", op))
	}
	// The weights (biases and norms) share one dtype: the kernel is
	// instantiated once per dtype.
	wdt := kernels.F32
	for _, w := range []kernels.Buffer{qBias, kBias, vBias, qNorm, kNorm} {
		if w != nil {
			wdt = w.DType()
			break
		}
	}
	opt := func(name string, x kernels.Buffer, n int) *buffer { return b.optBufOf(op, name, x, n, wdt) }
	qq := b.buf(op, "q", q, nTok*qd, kernels.F32, kernels.BF16) // BF16: for the tensor-core attention
	// qkv, gate, qPre and kPre: a bf16 model's activations may be BF16,
	// each on its own (the kernel's act_bf16 mask).
	act := func(name string, x kernels.Buffer, n int) *buffer {
		return b.optBufOf(op, name, x, n, kernels.F32, kernels.BF16)
	}
	g := act("gate", gate, nTok*qd)
	qp, kp := act("qPre", qPre, nTok*qd), act("kPre", kPre, nTok*kd)
	rq, rk := b.optBuf(op, "rstdQ", rstdQ, nTok*nHead), b.optBuf(op, "rstdK", rstdK, nTok*nKV)
	kc := b.buf(op, "kCache", kCache, kd, kernels.F32, kernels.BF16)
	vc := b.buf(op, "vCache", vCache, kc.n, kc.dt)
	b.cacheTraffic(op, kc, nTok, kd)
	tb := b.pages(op, pages, kc, kd)
	src := b.buf(op, "qkv", qkv, nTok*(qw+2*kd), kernels.F32, kernels.BF16)
	qb, kb, vb := opt("qBias", qBias, qw), opt("kBias", kBias, kd), opt("vBias", vBias, kd)
	qn, kn := opt("qNorm", qNorm, headDim), opt("kNorm", kNorm, headDim)
	f := b.buf(op, "invFreq", invFreq, rotaryDim/2, kernels.F32)
	s := b.buf(op, "seq", seq, nTok, kernels.I32)
	p := b.buf(op, "pos", pos, nTok, kernels.I32)
	bf16Query(op, qq.dt, kc.dt, headDim)
	if !usable(qq, g, qp, kp, rq, rk, kc, vc, tb, src, qb, kb, vb, qn, kn, f, s, p) {
		return
	}
	name := "attention_inputs_f32"
	if wdt == kernels.BF16 {
		name = "attention_inputs_wbf16"
	}
	if kc.dt == kernels.BF16 {
		name += "_kvbf16" // k and v rounded to nearest even, as kv_write_bf16
	}
	if qq.dt == kernels.BF16 {
		name += "_qbf16" // q too
	}
	b.launch(name, D2(nTok, nHead+2*nKV), D1(warpRound(headDim/2, attentionInputsBlock)), 0,
		qq.ptr, g.ptr, qp.ptr, kp.ptr, rq.ptr, rk.ptr, kc.ptr, vc.ptr, src.ptr, qb.ptr, kb.ptr, vb.ptr, qn.ptr, kn.ptr, f.ptr, s.ptr, p.ptr, tb.ptr,
		int32(nTok), int32(nHead), int32(nKV), int32(headDim), int32(rotaryDim), int32(pages.BlockSize), int32(pages.MaxBlocks), eps,
		bf16Mask(src, g, qp, kp))
}

func (b *Backend) AttentionInputsBackward(dqkv, dq, dgate, dkCache, dvCache, qPre, kPre, rstdQ, rstdK, qNorm, kNorm, invFreq, seq, pos kernels.Buffer,
	pages kernels.KVPages, nTok, nHead, nKV, headDim, rotaryDim int) {
	const op = "AttentionInputsBackward"
	positive(op, nTok, nHead, nKV, headDim)
	qd, kd := nHead*headDim, nKV*headDim
	qw := qd
	if dgate != nil {
		qw = 2 * qd
	}
	i32(op, nTok*(qw+2*kd))
	attentionInputsShape(op, nHead, nKV, headDim, rotaryDim)
	if (qNorm == nil) != (kNorm == nil) {
		panic(fmt.Sprintf("cuda: %s: qNorm and kNorm must both be set or both nil", op))
	}
	// dqkv, dq, dgate, qPre and kPre may each be BF16 (act_bf16).
	d := b.buf(op, "dqkv", dqkv, nTok*(qw+2*kd), kernels.F32, kernels.BF16)
	g := b.buf(op, "dq", dq, nTok*qd, kernels.F32, kernels.BF16)
	dg := b.optBufOf(op, "dgate", dgate, nTok*qd, kernels.F32, kernels.BF16)
	kc := b.buf(op, "dkCache", dkCache, kd, kernels.F32)
	vc := b.buf(op, "dvCache", dvCache, kc.n, kernels.F32)
	b.cacheTraffic(op, kc, nTok, kd)
	tb := b.pages(op, pages, kc, kd)
	empty := &buffer{owner: b}
	qp, kp, rq, rk, qn, kn := empty, empty, empty, empty, empty, empty
	wdt := kernels.F32
	if qNorm != nil {
		wdt = qNorm.DType()
		qp, kp = b.buf(op, "qPre", qPre, nTok*qd, kernels.F32, kernels.BF16), b.buf(op, "kPre", kPre, nTok*kd, kernels.F32, kernels.BF16)
		rq, rk = b.buf(op, "rstdQ", rstdQ, nTok*nHead, kernels.F32), b.buf(op, "rstdK", rstdK, nTok*nKV, kernels.F32)
		qn, kn = b.buf(op, "qNorm", qNorm, headDim, wdt), b.buf(op, "kNorm", kNorm, headDim, wdt)
	}
	f := b.buf(op, "invFreq", invFreq, rotaryDim/2, kernels.F32)
	s := b.buf(op, "seq", seq, nTok, kernels.I32)
	p := b.buf(op, "pos", pos, nTok, kernels.I32)
	if !usable(d, g, dg, kc, vc, tb, qp, kp, rq, rk, qn, kn, f, s, p) {
		return
	}
	name := "attention_inputs_backward_f32"
	if wdt == kernels.BF16 {
		name = "attention_inputs_backward_wbf16"
	}
	b.launch(name, D2(nTok, nHead+2*nKV), D1(warpRound(headDim/2, attentionInputsBlock)), 0,
		d.ptr, g.ptr, dg.ptr, kc.ptr, vc.ptr, qp.ptr, kp.ptr, rq.ptr, rk.ptr, qn.ptr, kn.ptr, f.ptr, s.ptr, p.ptr, tb.ptr,
		int32(nTok), int32(nHead), int32(nKV), int32(headDim), int32(rotaryDim), int32(pages.BlockSize), int32(pages.MaxBlocks),
		bf16Mask(d, g, dg, qp, kp))
}
