package cuda

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// The training ops (kernels.TrainOps), in the same pattern as ops.go:
// check operands and shapes (panicking with the op's name), skip if an
// allocation failed, pick the launch configuration (launch.go), launch.

var _ kernels.TrainOps = (*Backend)(nil)

// positive panics unless every dimension is at least 1, as the CPU
// backend's training ops do.
func positive(op string, dims ...int) {
	for _, d := range dims {
		if d <= 0 {
			panic(fmt.Sprintf("cuda: %s: dimensions %v must be positive", op, dims))
		}
	}
}

func flag(v bool) int32 {
	if v {
		return 1
	}
	return 0
}

func (b *Backend) Fill(x kernels.Buffer, value float32, n int) {
	i32("Fill", n)
	xx := b.buf("Fill", "x", x, n, kernels.F32)
	if !usable(xx) {
		return
	}
	b.elementwise("fill_f32", n, xx.ptr, value, int32(n))
}

func (b *Backend) Scale(x kernels.Buffer, alpha float32, n int) {
	i32("Scale", n)
	xx := b.buf("Scale", "x", x, n, kernels.F32)
	if !usable(xx) {
		return
	}
	b.elementwise("scale_f32", n, xx.ptr, alpha, int32(n))
}

// SumSquares reduces in two launches through a float64 scratch array of
// per-block partials (sumsquares.cu), so the result is deterministic.
func (b *Backend) SumSquares(out, x kernels.Buffer, n int) {
	const op = "SumSquares"
	i32(op, n)
	o := b.buf(op, "out", out, 1, kernels.F32)
	xx := b.buf(op, "x", x, n, kernels.F32)
	if !usable(o, xx) {
		return
	}
	if n == 0 {
		b.elementwise("fill_f32", 1, o.ptr, float32(0), int32(1))
		return
	}
	blocks := min((n+sumSquaresBlock-1)/sumSquaresBlock, sumSquaresMaxBlocks)
	partial, ok := b.scratch(8 * blocks)
	if !ok {
		return
	}
	defer b.putScratch(partial, 8*blocks)
	b.launch("sum_squares_partial_f32", D1(blocks), D1(sumSquaresBlock), 0, partial, xx.ptr, int32(n))
	b.launch("sum_squares_finish_f32", D1(1), D1(warpRound(blocks, sumSquaresMaxBlocks)), 0, o.ptr, partial, int32(blocks))
}

func (b *Backend) RMSNormBackward(dx, dxBF16, dy, x, w, rstd kernels.Buffer, rows, dim int, accumulate bool) {
	const op = "RMSNormBackward"
	positive(op, rows, dim)
	i32(op, rows*dim)
	d := b.buf(op, "dx", dx, rows*dim, kernels.F32)
	c := b.optBufOf(op, "dxBF16", dxBF16, rows*dim, kernels.BF16)
	g := b.buf(op, "dy", dy, rows*dim, kernels.F32, kernels.BF16)
	xx := b.buf(op, "x", x, rows*dim, kernels.F32)
	ww := b.buf(op, "w", w, dim, kernels.F32, kernels.BF16)
	r := b.buf(op, "rstd", rstd, rows, kernels.F32)
	if !usable(d, c, g, xx, ww, r) {
		return
	}
	name := "rmsnorm_backward_f32"
	if ww.dt == kernels.BF16 {
		name = "rmsnorm_backward_wbf16"
	}
	name += bf16Suffix(g, "_dybf16")
	// The block follows the row: 256 threads for hidden-size rows, fewer
	// for per-head q/k norms (dim = head_dim) so no warp idles.
	b.launch(name, D1(rows), D1(warpRound(dim, rowBlock)), 0,
		d.ptr, c.ptr, g.ptr, xx.ptr, ww.ptr, r.ptr, int32(rows), int32(dim), flag(accumulate))
}

func (b *Backend) SwiGLUBackward(dgate, dup, dy, gate, up kernels.Buffer, n int) {
	const op = "SwiGLUBackward"
	positive(op, n)
	i32(op, n)
	dg := b.buf(op, "dgate", dgate, n, kernels.F32, kernels.BF16)
	du := b.buf(op, "dup", dup, n, kernels.F32, kernels.BF16)
	g := b.buf(op, "dy", dy, n, kernels.F32, kernels.BF16)
	ga := b.buf(op, "gate", gate, n, kernels.F32, kernels.BF16)
	u := b.buf(op, "up", up, n, kernels.F32, kernels.BF16)
	if !usable(dg, du, g, ga, u) {
		return
	}
	if mask := bf16Mask(dg, du, g, ga, u); mask != 0 {
		b.elementwise("swiglu_backward_as", n, dg.ptr, du.ptr, g.ptr, ga.ptr, u.ptr, int32(n), mask)
		return
	}
	b.elementwise("swiglu_backward_f32", n, dg.ptr, du.ptr, g.ptr, ga.ptr, u.ptr, int32(n))
}

func (b *Backend) SigmoidGateBackward(dx, dgate, dy, x, gate kernels.Buffer, n int) {
	const op = "SigmoidGateBackward"
	positive(op, n)
	i32(op, n)
	d := b.buf(op, "dx", dx, n, kernels.F32, kernels.BF16)
	dg := b.buf(op, "dgate", dgate, n, kernels.F32, kernels.BF16)
	y := b.buf(op, "dy", dy, n, kernels.F32, kernels.BF16)
	xx := b.buf(op, "x", x, n, kernels.F32, kernels.BF16)
	g := b.buf(op, "gate", gate, n, kernels.F32, kernels.BF16)
	if !usable(d, dg, y, xx, g) {
		return
	}
	if mask := bf16Mask(d, dg, y, xx, g); mask != 0 {
		b.elementwise("sigmoid_gate_backward_as", n, d.ptr, dg.ptr, y.ptr, xx.ptr, g.ptr, int32(n), mask)
		return
	}
	b.elementwise("sigmoid_gate_backward_f32", n, d.ptr, dg.ptr, y.ptr, xx.ptr, g.ptr, int32(n))
}

func (b *Backend) AttentionBackward(dq, dk, dv, dout, out, lse, q, kCache, vCache, seq, pos kernels.Buffer, pages kernels.KVPages, nTok, nHead, nKV, headDim int, scale float32, variant kernels.AttentionVariant) {
	const op = "AttentionBackward"
	positive(op, nTok, nHead, nKV, headDim)
	i32(op, nTok*nHead*headDim, nKV*headDim)
	if nHead%nKV != 0 {
		panic(fmt.Sprintf("cuda: AttentionBackward: nHead %d is not a multiple of nKV %d", nHead, nKV))
	}
	if nKV > 65535 {
		panic(fmt.Sprintf("cuda: AttentionBackward: nKV %d exceeds the grid's y limit 65535", nKV))
	}
	group := nHead / nKV
	nq := nTok * nHead * headDim
	kc := b.buf(op, "kCache", kCache, nKV*headDim, kernels.F32, kernels.BF16)
	vc := b.buf(op, "vCache", vCache, nKV*headDim, kc.dt)
	b.cacheTraffic(op, kc, nTok, nKV*headDim)
	if kc.n != vc.n {
		panic(fmt.Sprintf("cuda: AttentionBackward: kCache has %d elements, vCache %d; they must match", kc.n, vc.n))
	}
	qq := b.buf(op, "q", q, nq, kernels.F32, kernels.BF16) // BF16: the tensor-core kernels (attention_flash_tc.go)
	tc := tensorCoreAttention(op, qq, kc, headDim)
	// Scalar fallback (f32 q, headDim > flashMaxHeadDim): q, dout, dq of the group; D per head; p and ds of the tile; its keys' cache rows.
	scalar := !tc && headDim > flashMaxHeadDim
	shared := 4 * (3*group*headDim + group + 2*group*attentionBackwardBlock + attentionBackwardBlock)
	if scalar && kCache.DType() != kernels.F32 {
		panic(fmt.Sprintf("cuda: AttentionBackward: headDim %d above %d needs f32 caches (the scalar attention_backward.cu), got %v", headDim, flashMaxHeadDim, kCache.DType()))
	}
	if scalar && shared > attentionBackwardMaxShared {
		panic(fmt.Sprintf("cuda: AttentionBackward: nHead/nKV %d × headDim %d needs %d bytes of shared memory, more than %d (attention_backward.cu)",
			group, headDim, shared, attentionBackwardMaxShared))
	}
	tb := b.pages(op, pages, kc, nKV*headDim)
	ops := []*buffer{
		b.buf(op, "dq", dq, nq, kernels.F32, kernels.BF16), // BF16 dq, dout, out: the tensor-core kernels (bf16Out)
		b.buf(op, "dk", dk, kc.n, kernels.F32),
		b.buf(op, "dv", dv, kc.n, kernels.F32),
		b.buf(op, "dout", dout, nq, kernels.F32, kernels.BF16),
		b.buf(op, "out", out, nq, kernels.F32, kernels.BF16),
		b.buf(op, "lse", lse, nTok*nHead, kernels.F32),
		qq,
		kc, vc,
		b.buf(op, "seq", seq, nTok, kernels.I32),
		b.buf(op, "pos", pos, nTok, kernels.I32),
		tb,
	}
	for i, name := range []string{"dq", "", "", "dout", "out"} {
		if name != "" {
			bf16Out(op, name, ops[i].dt, qq.dt)
		}
	}
	av := b.variantOf(op, variant, nHead) // the sinks are in lse: the kernels take the window alone
	if !usable(append(ops, av.sinks)...) {
		return
	}
	// Per query head and visible key, 2·headDim FLOPs a product: the flash
	// passes rebuild S = q·k and dP = dO·v twice (dk/dv pass, then dq
	// pass) and form dV, dK and dQ — 7 products (8 for the tensor-core
	// kernels at head dim 256, whose dV and dK passes each rebuild S); the
	// scalar kernel scores once, then dv, dk and dq — 5.
	products := int64(7)
	switch {
	case tc && ftcHD(headDim) >= 256:
		products = 8
	case scalar:
		products = 5
	}
	b.afterEachRun(func() {
		b.dev.CountFLOPs(2 * products * int64(nHead*headDim) * b.host.visibleKeys(ops[10].ptr, nTok, pages.MaxLen(), av))
	})
	if tc {
		b.attentionBackwardFlashTC(ops[0], ops[1], ops[2], ops[3], ops[4], ops[5], ops[6], kc, vc, ops[9], ops[10], tb, pages, nTok, nHead, nKV, headDim, scale, av.window)
		return
	}
	if headDim <= flashMaxHeadDim {
		b.attentionBackwardFlash(ops[0], ops[1], ops[2], ops[3], ops[4], ops[5], ops[6], kc, vc, ops[9], ops[10], tb, pages, nTok, nHead, nKV, headDim, scale, av.window)
		return
	}
	args := make([]any, 0, len(ops)+7)
	for _, x := range ops {
		args = append(args, x.ptr)
	}
	args = append(args, int32(nTok), int32(nHead), int32(nKV), int32(headDim), int32(pages.BlockSize), int32(pages.MaxBlocks), scale, av.window)
	b.launch("attention_backward_f32", D2(nTok, nKV), D1(attentionBackwardBlock), shared, args...)
}

func (b *Backend) LogSoftmaxGatherBackward(dlogits, dlogp, logits, target kernels.Buffer, rows, vocab int) {
	const op = "LogSoftmaxGatherBackward"
	positive(op, rows, vocab)
	i32(op, rows*vocab)
	d := b.buf(op, "dlogits", dlogits, rows*vocab, kernels.F32, kernels.BF16)
	g := b.buf(op, "dlogp", dlogp, rows, kernels.F32)
	lg := b.buf(op, "logits", logits, rows*vocab, kernels.F32)
	t := b.buf(op, "target", target, rows, kernels.I32)
	if !usable(d, g, lg, t) {
		return
	}
	name := "log_softmax_gather_backward_f32"
	if d.dt == kernels.BF16 {
		name = "log_softmax_gather_backward_bf16"
	}
	b.launch(name, D1(rows), D1(warpRound(vocab, logSoftmaxMaxBlock)), 0,
		d.ptr, g.ptr, lg.ptr, t.ptr, int32(rows), int32(vocab))
}

func (b *Backend) PolicyLoss(out kernels.PolicyLossOut, in kernels.PolicyLossIn, p kernels.PolicyLossParams) {
	const op = "PolicyLoss"
	n := in.N
	positive(op, n, in.NumSeq)
	i32(op, n, in.NumSeq+1)
	// Address 0: the kernel skips the KL term and writes no kl.
	ref, k := &buffer{owner: b}, &buffer{owner: b}
	if p.Beta != 0 {
		if in.RefLogp == nil || out.KL == nil {
			panic("cuda: PolicyLoss: kl or refLogp is nil but Beta is " + fmt.Sprint(p.Beta) + "; pass both or set Beta to 0")
		}
		ref = b.buf(op, "refLogp", in.RefLogp, n, kernels.F32)
		k = b.buf(op, "kl", out.KL, n, kernels.F32)
	}
	f := func(name string, x kernels.Buffer) *buffer { return b.buf(op, name, x, n, kernels.F32) }
	ops := []*buffer{
		f("loss", out.Loss), f("dlogp", out.DLogp), f("clip", out.Clip), f("isClip", out.ISClip), f("mismatch", out.Mismatch), k,
		f("logp", in.Logp), f("oldLogp", in.OldLogp), f("behaviourLogp", in.BehaviourLogp), ref,
		f("adv", in.Adv), f("weight", in.Weight), b.buf(op, "seqStart", in.SeqStart, in.NumSeq+1, kernels.I32),
	}
	if !usable(ops...) {
		return
	}
	args := make([]any, 0, len(ops)+11)
	for _, x := range ops {
		args = append(args, x.ptr)
	}
	args = append(args, int32(p.Objective), int32(p.IS), p.EpsLow, p.EpsHigh, p.Beta, p.MaskLow, p.MaskHigh, p.AdvTau, p.KLTau, p.ISMin, p.ISMax)
	// One block per sequence (its sums are block reductions).
	b.launch("policy_loss_f32", D1(in.NumSeq), D1(elementwiseBlock), 0, args...)
}

// AdamW computes the bias corrections on the host in float64, as torch
// does, and passes the kernel the step size lr/(1−β1^t) and √(1−β2^t).
func (b *Backend) AdamW(param, grad, m, v kernels.Buffer, n int, p kernels.AdamWParams) {
	const op = "AdamW"
	positive(op, n, p.Step)
	i32(op, n)
	pp := b.buf(op, "param", param, n, kernels.F32)
	g := b.buf(op, "grad", grad, n, kernels.F32)
	mm := b.buf(op, "m", m, n, kernels.F32)
	vv := b.buf(op, "v", v, n, kernels.F32)
	if !usable(pp, g, mm, vv) {
		return
	}
	lr := float64(p.LR)
	c1 := 1 - math.Pow(float64(p.Beta1), float64(p.Step))
	c2 := 1 - math.Pow(float64(p.Beta2), float64(p.Step))
	b.elementwise("adamw_f32", n, pp.ptr, g.ptr, mm.ptr, vv.ptr, int32(n), p.Beta1, p.Beta2, p.Eps,
		float32(1-lr*float64(p.WeightDecay)), float32(lr/c1), float32(math.Sqrt(c2)))
}

func (b *Backend) ScatterRows(out, src, idx kernels.Buffer, n, cols int) {
	const op = "ScatterRows"
	positive(op, n, cols)
	i32(op, n*cols, out.Len())
	o := b.buf(op, "out", out, cols, kernels.F32, kernels.BF16)
	s := b.buf(op, "src", src, n*cols, kernels.F32, kernels.BF16)
	ix := b.buf(op, "idx", idx, n, kernels.I32)
	if o.dt != s.dt {
		panic(fmt.Sprintf("cuda: %s: out is %v and src %v; the rows move as they are, so both are one dtype", op, o.dt, s.dt))
	}
	if !usable(o, s, ix) {
		return
	}
	b.launch("scatter_rows_"+map[kernels.DType]string{kernels.F32: "f32", kernels.BF16: "bf16"}[o.dt], D1(n), D1(warpRound(cols, 256)), 0, o.ptr, s.ptr, ix.ptr, int32(n), int32(cols))
}
