package cuda

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// attentionOperands are the checked operands of an attention op over a
// paged KV cache (Attention, AttentionSharedPrefix).
type attentionOperands struct {
	out, lse, q, k, v, table, seq, pos *buffer
	variant                            attnVariant
}

// attentionOperands checks the operands Attention and
// AttentionSharedPrefix share, panicking with op's name on a bad one, and
// reports whether there is work to launch (tokens, and every buffer
// usable). When there is, it counts the op's FLOPs — the same for both:
// groups change what is read, never what is computed. Every kernel
// (scalar, flash, split-KV decode, shared-prefix) computes per query head
// and visible key the score q·k and its share of p·v: 2·headDim FLOPs
// each.
func (b *Backend) attentionOperands(op string, out, lse, q, kCache, vCache, seq, pos kernels.Buffer, pages kernels.KVPages, nTok, nHead, nKV, headDim int, variant kernels.AttentionVariant) (attentionOperands, bool) {
	i32(op, nTok, nHead, nKV, headDim, nTok*nHead*headDim, nKV*headDim)
	if nKV <= 0 || nHead%nKV != 0 {
		panic(fmt.Sprintf("cuda: %s: nHead %d is not a multiple of nKV %d", op, nHead, nKV))
	}
	var a attentionOperands
	a.out = b.buf(op, "out", out, nTok*nHead*headDim, kernels.F32, kernels.BF16)
	a.lse = b.optBuf(op, "lse", lse, nTok*nHead)
	a.q = b.buf(op, "q", q, nTok*nHead*headDim, kernels.F32, kernels.BF16) // BF16: the tensor-core kernels (attention_flash_tc.go)
	bf16Out(op, "out", a.out.dt, a.q.dt)
	a.k = b.buf(op, "kCache", kCache, nKV*headDim, kernels.F32, kernels.BF16)
	a.v = b.buf(op, "vCache", vCache, nKV*headDim, a.k.dt)
	b.cacheTraffic(op, a.k, nTok, nKV*headDim)
	a.table = b.pages(op, pages, a.k, nKV*headDim)
	a.seq = b.buf(op, "seq", seq, nTok, kernels.I32)
	a.pos = b.buf(op, "pos", pos, nTok, kernels.I32)
	a.variant = b.variantOf(op, variant, nHead)
	if nTok == 0 || !usable(a.out, a.lse, a.q, a.k, a.v, a.table, a.seq, a.pos, a.variant.sinks) {
		return a, false
	}
	p, av := a.pos.ptr, a.variant
	b.afterEachRun(func() { b.dev.CountFLOPs(4 * int64(nHead*headDim) * b.host.visibleKeys(p, nTok, pages.MaxLen(), av)) })
	return a, true
}
