package cuda

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// The MoE ops (moe.cu). Grouping never reads the offsets back: the grouped
// GEMM launches enough row tiles for any split of its rows (⌈rows/64⌉ +
// nExperts), and each block finds its expert on the device.

// moeMaxTopK is MOE_MAX_TOPK in moe.cu.
const moeMaxTopK = 32

// gmmTile is GMM_TM and GMM_TN in moe.cu.
const gmmTile = 64

// tcTile is TC_TM and TC_TN, tcThreads TC_THREADS (tensor_core.cuh): the
// output tile and block of the tensor-core kernels.
const (
	tcTile    = 64
	tcThreads = 128
)

func moeShape(op string, n, nExperts, topK int) {
	i32(op, n, nExperts, topK, n*topK, n*nExperts)
	if n <= 0 || nExperts <= 0 || topK <= 0 || topK > nExperts || topK > moeMaxTopK {
		panic(fmt.Sprintf("cuda: %s: n %d, nExperts %d, topK %d: want positive sizes and topK ≤ min(nExperts, %d)", op, n, nExperts, topK, moeMaxTopK))
	}
}

func (b *Backend) MoERoute(weights, experts, logits kernels.Buffer, n, nExperts, topK int, normTopK, replay bool) {
	const op = "MoERoute"
	moeShape(op, n, nExperts, topK)
	w := b.buf(op, "weights", weights, n*topK, kernels.F32)
	e := b.buf(op, "experts", experts, n*topK, kernels.I32)
	l := b.buf(op, "logits", logits, n*nExperts, kernels.F32)
	if !usable(w, e, l) {
		return
	}
	b.elementwise("moe_route_f32", n, w.ptr, e.ptr, l.ptr, int32(n), int32(nExperts), int32(topK), flag(normTopK), flag(replay))
}

func (b *Backend) MoERouteBackward(dlogits, dweights, dprobs, logits, experts kernels.Buffer, n, nExperts, topK int, normTopK bool) {
	const op = "MoERouteBackward"
	moeShape(op, n, nExperts, topK)
	dl := b.buf(op, "dlogits", dlogits, n*nExperts, kernels.F32)
	dw := b.buf(op, "dweights", dweights, n*topK, kernels.F32)
	dp := b.optBuf(op, "dprobs", dprobs, nExperts)
	l := b.buf(op, "logits", logits, n*nExperts, kernels.F32)
	e := b.buf(op, "experts", experts, n*topK, kernels.I32)
	if !usable(dl, dw, dp, l, e) {
		return
	}
	b.elementwise("moe_route_backward_f32", n, dl.ptr, dw.ptr, dp.ptr, l.ptr, e.ptr, int32(n), int32(nExperts), int32(topK), flag(normTopK))
}

func sigmoidRouteShape(op string, n, nExperts, topK int, r kernels.SigmoidRouting) {
	moeShape(op, n, nExperts, topK)
	if err := r.Check(nExperts, topK); err != nil {
		panic(fmt.Sprintf("cuda: %s: %v", op, err))
	}
}

func (b *Backend) MoERouteSigmoid(weights, experts, logits, bias kernels.Buffer, n, nExperts, topK int, r kernels.SigmoidRouting, replay bool) {
	const op = "MoERouteSigmoid"
	sigmoidRouteShape(op, n, nExperts, topK, r)
	w := b.buf(op, "weights", weights, n*topK, kernels.F32)
	e := b.buf(op, "experts", experts, n*topK, kernels.I32)
	l := b.buf(op, "logits", logits, n*nExperts, kernels.F32)
	bs := b.optBuf(op, "bias", bias, nExperts)
	if !usable(w, e, l, bs) {
		return
	}
	b.elementwise("moe_route_sigmoid_f32", n, w.ptr, e.ptr, l.ptr, bs.ptr, int32(n), int32(nExperts), int32(topK),
		int32(r.Groups), int32(r.TopKGroups), flag(r.NormTopK), r.Scale, flag(replay))
}

func (b *Backend) MoERouteSigmoidBackward(dlogits, dweights, logits, experts kernels.Buffer, n, nExperts, topK int, r kernels.SigmoidRouting) {
	const op = "MoERouteSigmoidBackward"
	sigmoidRouteShape(op, n, nExperts, topK, r)
	dl := b.buf(op, "dlogits", dlogits, n*nExperts, kernels.F32)
	dw := b.buf(op, "dweights", dweights, n*topK, kernels.F32)
	l := b.buf(op, "logits", logits, n*nExperts, kernels.F32)
	e := b.buf(op, "experts", experts, n*topK, kernels.I32)
	if !usable(dl, dw, l, e) {
		return
	}
	b.elementwise("moe_route_sigmoid_backward_f32", n, dl.ptr, dw.ptr, l.ptr, e.ptr, int32(n), int32(nExperts), int32(topK),
		flag(r.NormTopK), r.Scale)
}

func (b *Backend) MoEGroup(offsets, tokens, rows, experts kernels.Buffer, n, nExperts, topK int) {
	const op = "MoEGroup"
	moeShape(op, n, nExperts, topK)
	total := n * topK
	o := b.buf(op, "offsets", offsets, nExperts+1, kernels.I32)
	t := b.buf(op, "tokens", tokens, total, kernels.I32)
	r := b.buf(op, "rows", rows, total, kernels.I32)
	e := b.buf(op, "experts", experts, total, kernels.I32)
	if !usable(o, t, r, e) {
		return
	}
	counts, ok := b.scratch(4 * nExperts)
	if !ok {
		return
	}
	defer b.putScratch(counts, 4*nExperts)
	b.launch("moe_count_i32", D1(nExperts), D1(256), 0, counts, e.ptr, int32(total))
	b.launch("moe_place_i32", D1(nExperts), D1(256), 0, o.ptr, t.ptr, r.ptr, counts, e.ptr, int32(total), int32(nExperts), int32(topK))
}

func (b *Backend) GroupedMatMul(c, a, bm, offsets kernels.Buffer, rows, nExperts, n, k int, transB bool, alpha, beta float32) {
	const op = "GroupedMatMul"
	i32(op, rows, nExperts, n, k, rows*n, rows*k, nExperts*n*k)
	if nExperts <= 0 || n <= 0 || k <= 0 {
		panic(fmt.Sprintf("cuda: %s: nExperts %d, n %d, k %d must be positive", op, nExperts, n, k))
	}
	if rows == 0 {
		return
	}
	cc := b.buf(op, "C", c, rows*n, kernels.F32, kernels.BF16)
	aa := b.buf(op, "A", a, rows*k, kernels.F32, kernels.BF16)
	bb := b.buf(op, "B", bm, nExperts*n*k, kernels.F32, kernels.BF16)
	off := b.buf(op, "offsets", offsets, nExperts+1, kernels.I32)
	if !usable(cc, aa, bb, off) {
		return
	}
	b.dev.CountFLOPs(gemmFLOPs(rows, n, k)) // each row times its expert's n×k matrix
	b.betaTraffic(op, cc, rows*n, beta)
	act := bf16Suffix(aa, "_abf16") + bf16Suffix(cc, "_cbf16")
	if bb.dt == kernels.BF16 {
		// bf16 experts on tensor cores (grouped_matmul_tc.cu): an f32 A
		// rounded to bf16 as it is staged, f32 accumulation.
		grid := D2((rows+tcTile-1)/tcTile+nExperts, (n+tcTile-1)/tcTile)
		b.launch("grouped_matmul_tc_bf16"+act, grid, D1(tcThreads), 0, cc.ptr, aa.ptr, bb.ptr, off.ptr, int32(nExperts), int32(n), int32(k), flag(transB), alpha, beta)
		return
	}
	grid := D2((rows+gmmTile-1)/gmmTile+nExperts, (n+gmmTile-1)/gmmTile)
	b.launch("grouped_matmul_f32"+act, grid, D1(256), 0, cc.ptr, aa.ptr, bb.ptr, off.ptr, int32(nExperts), int32(n), int32(k), flag(transB), alpha, beta)
}

func (b *Backend) GroupedMatMulMXFP4(c, a kernels.Buffer, bm kernels.MXFP4, offsets kernels.Buffer, rows, nExperts, n, k int, transB bool, alpha, beta float32) {
	const op = "GroupedMatMulMXFP4"
	i32(op, rows, nExperts, n, k, rows*n, rows*k, nExperts*n*k)
	if nExperts <= 0 || n <= 0 || k <= 0 {
		panic(fmt.Sprintf("cuda: %s: nExperts %d, n %d, k %d must be positive", op, nExperts, n, k))
	}
	if (n*k)%32 != 0 || (transB && k%32 != 0) || (!transB && n%32 != 0) {
		panic(fmt.Sprintf("cuda: %s: n %d, k %d: the stored rows are not whole blocks of 32", op, n, k))
	}
	if rows == 0 {
		return
	}
	cc := b.buf(op, "C", c, rows*n, kernels.F32, kernels.BF16)
	aa := b.buf(op, "A", a, rows*k, kernels.F32, kernels.BF16)
	codes := b.buf(op, "B.Codes", bm.Codes, nExperts*n*k/2, kernels.U8)
	scales := b.buf(op, "B.Scales", bm.Scales, nExperts*n*k/32, kernels.U8)
	off := b.buf(op, "offsets", offsets, nExperts+1, kernels.I32)
	if !usable(cc, aa, codes, scales, off) {
		return
	}
	b.dev.CountFLOPs(gemmFLOPs(rows, n, k))
	b.betaTraffic(op, cc, rows*n, beta)
	// grouped_matmul_tc.cu: the codes decoded as a tile is staged, then
	// the bf16 kernel's path (an f32 A rounded to bf16, f32 accumulation).
	grid := D2((rows+tcTile-1)/tcTile+nExperts, (n+tcTile-1)/tcTile)
	b.launch("grouped_matmul_tc_mxfp4"+bf16Suffix(aa, "_abf16")+bf16Suffix(cc, "_cbf16"), grid, D1(tcThreads), 0, cc.ptr, aa.ptr, codes.ptr, scales.ptr, off.ptr, int32(nExperts), int32(n), int32(k), flag(transB), alpha, beta)
}

func (b *Backend) GroupedMatMulTN(c, a, bm, offsets kernels.Buffer, rows, nExperts, m, n int, alpha, beta float32) {
	const op = "GroupedMatMulTN"
	i32(op, rows, nExperts, m, n, rows*m, rows*n, nExperts*m*n)
	if nExperts <= 0 || m <= 0 || n <= 0 || nExperts > 65535 {
		panic(fmt.Sprintf("cuda: %s: nExperts %d (≤ 65535), m %d, n %d must be positive", op, nExperts, m, n))
	}
	cc := b.buf(op, "C", c, nExperts*m*n, kernels.F32)
	aa := b.buf(op, "A", a, rows*m, kernels.F32, kernels.BF16)
	bb := b.buf(op, "B", bm, rows*n, kernels.F32, kernels.BF16)
	off := b.buf(op, "offsets", offsets, nExperts+1, kernels.I32)
	if !usable(cc, aa, bb, off) {
		return
	}
	b.dev.CountFLOPs(gemmFLOPs(m, n, rows)) // C[e] = A[e's rows]ᵀ·B[e's rows], rows in all
	b.betaTraffic(op, cc, nExperts*m*n, beta)
	b.launch("grouped_matmul_tn_f32"+bf16Suffix(aa, "_abf16")+bf16Suffix(bb, "_bbf16"), D2((m*n+255)/256, nExperts), D1(256), 0, cc.ptr, aa.ptr, bb.ptr, off.ptr, int32(m), int32(n), alpha, beta)
}

func (b *Backend) MoECombine(out, x, weights, rows kernels.Buffer, n, topK, cols int) {
	const op = "MoECombine"
	i32(op, n, topK, cols, n*topK*cols)
	o := b.buf(op, "out", out, n*cols, kernels.F32, kernels.BF16)
	xx := b.buf(op, "x", x, n*topK*cols, kernels.F32, kernels.BF16)
	w := b.optBuf(op, "weights", weights, n*topK)
	r := b.buf(op, "rows", rows, n*topK, kernels.I32)
	if n == 0 || cols == 0 || !usable(o, xx, w, r) {
		return
	}
	if mask := bf16Mask(o, xx); mask != 0 {
		b.launch("moe_combine_as", D1(n), D1(warpRound(cols, 256)), 0, o.ptr, xx.ptr, w.ptr, r.ptr, int32(topK), int32(cols), mask)
		return
	}
	b.launch("moe_combine_f32", D1(n), D1(warpRound(cols, 256)), 0, o.ptr, xx.ptr, w.ptr, r.ptr, int32(topK), int32(cols))
}

func (b *Backend) MoECombineBackward(dx, dweights, dout, x, weights, rows kernels.Buffer, n, topK, cols int) {
	const op = "MoECombineBackward"
	i32(op, n, topK, cols, n*topK*cols)
	d := b.buf(op, "dx", dx, n*topK*cols, kernels.F32, kernels.BF16)
	dw := b.buf(op, "dweights", dweights, n*topK, kernels.F32)
	do := b.buf(op, "dout", dout, n*cols, kernels.F32, kernels.BF16)
	xx := b.buf(op, "x", x, n*topK*cols, kernels.F32, kernels.BF16)
	w := b.buf(op, "weights", weights, n*topK, kernels.F32)
	r := b.buf(op, "rows", rows, n*topK, kernels.I32)
	if n == 0 || cols == 0 || !usable(d, dw, do, xx, w, r) {
		return
	}
	if mask := bf16Mask(d, do, xx); mask != 0 {
		b.launch("moe_combine_backward_as", D1(n*topK), D1(warpRound(cols, 256)), 0, d.ptr, dw.ptr, do.ptr, xx.ptr, w.ptr, r.ptr, int32(topK), int32(cols), mask)
		return
	}
	b.launch("moe_combine_backward_f32", D1(n*topK), D1(warpRound(cols, 256)), 0, d.ptr, dw.ptr, do.ptr, xx.ptr, w.ptr, r.ptr, int32(topK), int32(cols))
}
