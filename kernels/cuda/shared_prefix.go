package cuda

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// AttentionSharedPrefix runs attention_decode.cu's two passes — the
// groups' shared blocks once per group (attention_prefix), each token's
// own keys past them (attention_suffix) — into 2·nSplit partial slots
// per row, and attention_decode_combine over them. Head dims above the
// flash kernels' (the scalar attention.cu) run Attention: groups change
// what is read, never the result. So does a BF16 q (a bf16 model's
// training trace, whose groups share prompts): the passes here take f32
// q on CUDA cores, while the tensor-core flash kernels read each
// sequence's shared prompt rows through the table like any other.
func (b *Backend) AttentionSharedPrefix(out, lse, q, kCache, vCache, seq, pos, groups kernels.Buffer, pages kernels.KVPages, nTok, nHead, nKV, headDim int, scale float32, variant kernels.AttentionVariant) {
	const op = "AttentionSharedPrefix"
	if out != nil && q != nil {
		bf16Out(op, "out", out.DType(), q.DType())
	}
	if headDim > flashMaxHeadDim || q != nil && q.DType() == kernels.BF16 {
		i32(op, nTok*kernels.PrefixGroupWords)
		b.buf(op, "groups", groups, nTok*kernels.PrefixGroupWords, kernels.I32)
		b.Attention(out, lse, q, kCache, vCache, seq, pos, pages, nTok, nHead, nKV, headDim, scale, variant)
		return
	}
	i32(op, nTok*kernels.PrefixGroupWords)
	if headDim <= 0 {
		panic(fmt.Sprintf("cuda: %s: headDim %d must be positive", op, headDim))
	}
	a, ok := b.attentionOperands(op, out, lse, q, kCache, vCache, seq, pos, pages, nTok, nHead, nKV, headDim, variant)
	gr := b.buf(op, "groups", groups, nTok*kernels.PrefixGroupWords, kernels.I32)
	if !ok || !usable(gr) {
		return
	}
	o, l, qq, kc, vc, tb, s := a.out, a.lse, a.q, a.k, a.v, a.table, a.seq
	p := a.pos
	chunks := (nHead/nKV + decodeHeads - 1) / decodeHeads
	if nKV*chunks > 65535 {
		panic(fmt.Sprintf("cuda: %s: %d KV heads × %d head chunks exceed the grid's y limit 65535", op, nKV, chunks))
	}
	splitLen := b.decodeSplitLen(pages.MaxLen(), nTok*nKV*chunks)
	nSplit := (pages.MaxLen() + splitLen - 1) / splitLen
	dpl, kv := (headDim+31)/32, kvSuffix(kc.dt)
	shared := 4 * decodeThreads / 32 * decodeHeads * (2 + 32*dpl)
	grid := Dim3{uint32(nTok), uint32(nKV * chunks), uint32(nSplit)}
	parts := nTok * nHead * 2 * nSplit
	bytes := 4 * parts * (2 + headDim)
	scratch, ok := b.scratch(bytes)
	if !ok {
		return
	}
	pm, pl, po := scratch, scratch+DevicePtr(4*parts), scratch+DevicePtr(8*parts)
	geom := []any{tb.ptr, int32(pages.BlockSize), int32(pages.MaxBlocks), int32(nHead), int32(nKV), int32(headDim), int32(splitLen), scale, a.variant.window}
	b.launch(fmt.Sprintf("attention_prefix_dpl%d_%s", dpl, kv), grid, D1(decodeThreads), shared,
		append([]any{pm, pl, po, qq.ptr, kc.ptr, vc.ptr, s.ptr, p.ptr, gr.ptr}, geom...)...)
	b.launch(fmt.Sprintf("attention_suffix_dpl%d_%s", dpl, kv), grid, D1(decodeThreads), shared,
		append([]any{pm, pl, po, qq.ptr, kc.ptr, vc.ptr, s.ptr, p.ptr, gr.ptr}, geom...)...)
	b.launch("attention_decode_combine", D1(nTok*nHead), D1(decodeThreads), 0, o.ptr, l.ptr, pm, pl, po, int32(2*nSplit), int32(headDim),
		a.variant.sinks.ptr, int32(nHead))
	b.putScratch(scratch, bytes)
}

func init() {
	for _, kv := range []string{"bf16", "f32"} {
		for dpl := 1; dpl <= 4; dpl++ {
			kernelMaxBlock[fmt.Sprintf("attention_prefix_dpl%d_%s", dpl, kv)] = decodeThreads
			kernelMaxBlock[fmt.Sprintf("attention_suffix_dpl%d_%s", dpl, kv)] = decodeThreads
		}
	}
}
