package cuda

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// Every op: check operands and shapes (panicking with the op's name, per
// the kernels contract), skip if an operand's allocation failed, pick the
// launch configuration, launch. Kernels take int32 sizes; shapes beyond
// that are rejected here rather than truncated.

func i32(op string, vals ...int) {
	for _, v := range vals {
		if v < 0 || v > math.MaxInt32 {
			panic(fmt.Sprintf("cuda: %s: size %d outside 0..2³¹-1", op, v))
		}
	}
}

func (b *Backend) MatMul(c, a, bm kernels.Buffer, m, n, k int, transA, transB bool, alpha, beta float32) {
	const op = "MatMul"
	i32(op, m, n, k, m*k, k*n, m*n)
	ca := b.buf(op, "C", c, m*n, kernels.F32, kernels.BF16)
	aa := b.buf(op, "A", a, m*k, kernels.F32, kernels.BF16)
	ba := b.buf(op, "B", bm, k*n, kernels.F32, kernels.BF16)
	if m == 0 || n == 0 || !usable(ca, aa, ba) {
		return
	}
	// Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, and a
	// row-major matrix is its own transpose read column-major: swap the
	// operands, keep the flags. cuBLAS rejects a leading dimension below
	// 1 even when k = 0 (then C = beta·C).
	ldb, lda := n, max(1, k)
	if transB {
		ldb = max(1, k)
	}
	if transA {
		lda = m
	}
	if beta != 0 {
		b.addTraffic(op+"/C beta", ca.dt.Size()*m*n)
	}
	if ba.dt == kernels.F32 {
		b.sgemmMixed(aa, ba, ca, m, n, k, transA, transB, lda, ldb, alpha, beta)
		return
	}
	// BF16 weights: cublasGemmEx pairs A and B of one type (there is no
	// f32×bf16 GEMM), so the activations are rounded to bf16 in pooled
	// scratch — what a bf16 PyTorch/HF matmul does — and the products are
	// summed in f32 into C. A's m·k elements are contiguous whichever
	// way it is transposed, so one conversion covers it. An A that is
	// already bf16 (a fused op's cast) is used as it is. A bf16 C takes
	// the GEMM that rounds the f32 result once at its store.
	gemm := b.dev.GemmBF16
	if ca.dt == kernels.BF16 {
		gemm = b.dev.GemmBF16C
	}
	if aa.dt == kernels.BF16 {
		b.fail(gemm(transB, transA, n, m, k, alpha, ba.ptr, ldb, aa.ptr, lda, beta, ca.ptr, n))
		return
	}
	tmp, ok := b.convertedCopy(op+"/A cast", "f32_to_bf16", aa.ptr, m*k, 2)
	if !ok {
		return
	}
	defer b.putScratch(tmp, 2*m*k)
	b.pending = true
	b.fail(gemm(transB, transA, n, m, k, alpha, ba.ptr, ldb, tmp, lda, beta, ca.ptr, n))
}

func (b *Backend) GatherRows(out, table, idx kernels.Buffer, n, cols int) {
	const op = "GatherRows"
	i32(op, n, cols, n*cols)
	o := b.buf(op, "out", out, n*cols, kernels.F32, kernels.BF16)
	t := b.buf(op, "table", table, cols, kernels.F32, kernels.BF16)
	ix := b.buf(op, "idx", idx, n, kernels.I32)
	if n == 0 || cols == 0 || !usable(o, t, ix) {
		return
	}
	b.gatherTraffic(op, t, n, cols)
	if o.dt == kernels.BF16 {
		b.launch("gather_rows_as", D1(n), D1(warpRound(cols, 256)), 0, o.ptr, t.ptr, ix.ptr, int32(n), int32(cols), bf16Mask(o, t))
		return
	}
	name := "gather_rows_f32"
	if t.dt == kernels.BF16 {
		name = "gather_rows_bf16"
	}
	b.launch(name, D1(n), D1(warpRound(cols, 256)), 0, o.ptr, t.ptr, ix.ptr, int32(n), int32(cols))
}

func (b *Backend) RMSNorm(out, rstd, x, w kernels.Buffer, rows, dim int, eps float32) {
	const op = "RMSNorm"
	i32(op, rows, dim, rows*dim)
	o := b.buf(op, "out", out, rows*dim, kernels.F32)
	r := b.optBuf(op, "rstd", rstd, rows)
	xx := b.buf(op, "x", x, rows*dim, kernels.F32)
	ww := b.buf(op, "w", w, dim, kernels.F32, kernels.BF16)
	if rows == 0 || !usable(o, r, xx, ww) {
		return
	}
	name := "rmsnorm_f32"
	if ww.dt == kernels.BF16 {
		name = "rmsnorm_wbf16"
	}
	b.launch(name, D1(rows), D1(rowBlock), 0, o.ptr, r.ptr, xx.ptr, ww.ptr, int32(rows), int32(dim), eps)
}

func (b *Backend) RoPE(x, pos, invFreq kernels.Buffer, nTok, nHead, headDim int, inverse bool) {
	const op = "RoPE"
	i32(op, nTok, nHead, headDim, nTok*nHead*headDim)
	if headDim%2 != 0 {
		panic(fmt.Sprintf("cuda: RoPE: headDim %d is odd", headDim))
	}
	xx := b.buf(op, "x", x, nTok*nHead*headDim, kernels.F32)
	p := b.buf(op, "pos", pos, nTok, kernels.I32)
	f := b.buf(op, "invFreq", invFreq, headDim/2, kernels.F32)
	if !usable(xx, p, f) {
		return
	}
	inv := int32(0)
	if inverse {
		inv = 1
	}
	b.elementwise("rope_f32", nTok*nHead*headDim/2, xx.ptr, p.ptr, f.ptr, int32(nTok), int32(nHead), int32(headDim), inv)
}

// addBiasKernels[x][bias] (0 f32, 1 bf16) is AddBias' kernel.
var addBiasKernels = [2][2]string{{"add_bias_f32", "add_bias_bf16"}, {"add_bias_f32_xbf16", "add_bias_bf16_xbf16"}}

func (b *Backend) AddBias(x, bias kernels.Buffer, rows, cols int) {
	const op = "AddBias"
	i32(op, rows, cols, rows*cols)
	xx := b.buf(op, "x", x, rows*cols, kernels.F32, kernels.BF16)
	bb := b.buf(op, "bias", bias, cols, kernels.F32, kernels.BF16)
	if !usable(xx, bb) {
		return
	}
	b.elementwise(addBiasKernels[isBF16(xx)][isBF16(bb)], rows*cols, xx.ptr, bb.ptr, int32(rows), int32(cols))
}

// addKernels[out][a][b] (0 f32, 1 bf16) is Add's kernel: add_f32 when
// every operand is f32, add_<out>_<a>_<b> otherwise. Add swaps a bf16 a
// with an f32 b (f32 addition commutes exactly), so five kernels cover
// the seven mixed cases.
var addKernels = [2][2][2]string{
	{{"add_f32", "add_f32_f32_bf16"}, {"", "add_f32_bf16_bf16"}},
	{{"add_bf16_f32_f32", "add_bf16_f32_bf16"}, {"", "add_bf16_bf16_bf16"}},
}

func (b *Backend) Add(out, a, bb kernels.Buffer, n int) {
	const op = "Add"
	i32(op, n)
	o := b.buf(op, "out", out, n, kernels.F32, kernels.BF16)
	aa := b.buf(op, "a", a, n, kernels.F32, kernels.BF16)
	b2 := b.buf(op, "b", bb, n, kernels.F32, kernels.BF16)
	if !usable(o, aa, b2) {
		return
	}
	if aa.dt == kernels.BF16 && b2.dt == kernels.F32 {
		aa, b2 = b2, aa
	}
	b.elementwise(addKernels[isBF16(o)][isBF16(aa)][isBF16(b2)], n, o.ptr, aa.ptr, b2.ptr, int32(n))
}

// isBF16 is 1 for a BF16 buffer and 0 for an F32 one: an index into a
// table of kernel names by operand dtype.
func isBF16(x *buffer) int {
	if x.dt == kernels.BF16 {
		return 1
	}
	return 0
}

func (b *Backend) SwiGLU(out, gate, up kernels.Buffer, n int) {
	const op = "SwiGLU"
	i32(op, n)
	o := b.buf(op, "out", out, n, kernels.F32, kernels.BF16)
	g := b.buf(op, "gate", gate, n, kernels.F32, kernels.BF16)
	u := b.buf(op, "up", up, n, kernels.F32, kernels.BF16)
	if !usable(o, g, u) {
		return
	}
	if mask := bf16Mask(o, g, u); mask != 0 {
		b.elementwise("swiglu_as", n, o.ptr, g.ptr, u.ptr, int32(n), mask)
		return
	}
	b.elementwise("swiglu_f32", n, o.ptr, g.ptr, u.ptr, int32(n))
}

func (b *Backend) SigmoidGate(out, x, gate kernels.Buffer, n int) {
	const op = "SigmoidGate"
	i32(op, n)
	o := b.buf(op, "out", out, n, kernels.F32, kernels.BF16)
	xx := b.buf(op, "x", x, n, kernels.F32, kernels.BF16)
	g := b.buf(op, "gate", gate, n, kernels.F32, kernels.BF16)
	if !usable(o, xx, g) {
		return
	}
	if mask := bf16Mask(o, xx, g); mask != 0 {
		b.elementwise("sigmoid_gate_as", n, o.ptr, xx.ptr, g.ptr, int32(n), mask)
		return
	}
	b.elementwise("sigmoid_gate_f32", n, o.ptr, xx.ptr, g.ptr, int32(n))
}

func (b *Backend) KVWrite(cache, x, seq, pos kernels.Buffer, pages kernels.KVPages, nTok, width int) {
	const op = "KVWrite"
	i32(op, nTok, width, nTok*width)
	c := b.buf(op, "cache", cache, width, kernels.F32, kernels.BF16)
	tb := b.pages(op, pages, c, width)
	xx := b.buf(op, "x", x, nTok*width, kernels.F32)
	s := b.buf(op, "seq", seq, nTok, kernels.I32)
	p := b.buf(op, "pos", pos, nTok, kernels.I32)
	if nTok == 0 || width == 0 || !usable(c, tb, xx, s, p) {
		return
	}
	name := "kv_write_f32"
	if c.dt == kernels.BF16 {
		name = "kv_write_bf16" // rounds to nearest even
	}
	b.launch(name, D1(nTok), D1(warpRound(width, 256)), 0, c.ptr, xx.ptr, s.ptr, p.ptr, tb.ptr,
		int32(nTok), int32(width), int32(pages.BlockSize), int32(pages.MaxBlocks))
}

func (b *Backend) Attention(out, lse, q, kCache, vCache, seq, pos kernels.Buffer, pages kernels.KVPages, nTok, nHead, nKV, headDim int, scale float32, variant kernels.AttentionVariant) {
	const op = "Attention"
	if headDim <= 0 || headDim > attentionMaxHeadDim {
		panic(fmt.Sprintf("cuda: Attention: headDim %d outside 1..%d (attention.cu holds at most %d dims per thread)", headDim, attentionMaxHeadDim, attentionMaxHeadDim/attentionBlock))
	}
	if nHead > 65535 {
		panic(fmt.Sprintf("cuda: Attention: nHead %d exceeds the grid's y limit 65535", nHead))
	}
	a, ok := b.attentionOperands(op, out, lse, q, kCache, vCache, seq, pos, pages, nTok, nHead, nKV, headDim, variant)
	if !ok {
		return
	}
	o, l, qq, kc, vc, tb, s, p := a.out, a.lse, a.q, a.k, a.v, a.table, a.seq, a.pos
	if tensorCoreAttention(op, qq, kc, headDim) {
		b.attentionFlashTC(o, l, qq, kc, vc, s, p, tb, pages, nTok, nHead, nKV, headDim, scale, a.variant)
		return
	}
	if b.prefillOnTensorCores(qq, kc, vc, pages, nTok, headDim) {
		b.attentionFlashTCFromF32(o, l, qq, kc, vc, s, p, tb, pages, nTok, nHead, nKV, headDim, scale, a.variant)
		return
	}
	if headDim <= flashMaxHeadDim {
		b.attentionFlash(o, l, qq, kc, vc, s, p, tb, pages, nTok, nHead, nKV, headDim, scale, a.variant)
		return
	}
	// headDim 129..256: the scalar kernel (attention_bf16 widens a bf16
	// cache as it reads). q, then the tile's probabilities and its keys'
	// cache rows.
	shared := 4 * (headDim + 2*attentionBlock)
	name := "attention_f32"
	if kc.dt == kernels.BF16 {
		name = "attention_bf16"
	}
	b.launch(name, D2(nTok, nHead), D1(attentionBlock), shared,
		o.ptr, l.ptr, qq.ptr, kc.ptr, vc.ptr, s.ptr, p.ptr, tb.ptr,
		int32(nTok), int32(nHead), int32(nKV), int32(headDim), int32(pages.BlockSize), int32(pages.MaxBlocks), scale,
		a.variant.window, a.variant.sinks.ptr)
}

func (b *Backend) LogSoftmaxGather(logp, entropy, logits, target kernels.Buffer, rows, vocab int) {
	const op = "LogSoftmaxGather"
	i32(op, rows, vocab, rows*vocab)
	if vocab <= 0 {
		panic(fmt.Sprintf("cuda: LogSoftmaxGather: vocab %d", vocab))
	}
	lp := b.buf(op, "logp", logp, rows, kernels.F32)
	e := b.optBuf(op, "entropy", entropy, rows)
	lg := b.buf(op, "logits", logits, rows*vocab, kernels.F32)
	t := b.buf(op, "target", target, rows, kernels.I32)
	if rows == 0 || !usable(lp, e, lg, t) {
		return
	}
	b.launch("log_softmax_gather_f32", D1(rows), D1(warpRound(vocab, logSoftmaxMaxBlock)), 0,
		lp.ptr, e.ptr, lg.ptr, t.ptr, int32(rows), int32(vocab))
}

func (b *Backend) CopyColumns(dst, src kernels.Buffer, rows, width, dstCols, dstOff, srcCols, srcOff int) {
	const op = "CopyColumns"
	positive(op, rows, width)
	i32(op, rows*dstCols, rows*srcCols)
	if dstOff < 0 || srcOff < 0 || dstOff+width > dstCols || srcOff+width > srcCols {
		panic(fmt.Sprintf("cuda: %s: columns [%d, %d) of %d and [%d, %d) of %d", op, dstOff, dstOff+width, dstCols, srcOff, srcOff+width, srcCols))
	}
	d := b.buf(op, "dst", dst, rows*dstCols, kernels.F32, kernels.BF16)
	s := b.buf(op, "src", src, rows*srcCols, kernels.F32, kernels.BF16)
	if !usable(d, s) {
		return
	}
	if mask := bf16Mask(d, s); mask != 0 {
		b.launch("copy_columns_as", D1(rows), D1(warpRound(width, 256)), 0, d.ptr, s.ptr,
			int32(width), int32(dstCols), int32(dstOff), int32(srcCols), int32(srcOff), mask)
		return
	}
	b.launch("copy_columns_f32", D1(rows), D1(warpRound(width, 256)), 0, d.ptr, s.ptr,
		int32(width), int32(dstCols), int32(dstOff), int32(srcCols), int32(srcOff))
}
