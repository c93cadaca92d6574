package cpu

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// AttentionSharedPrefix is Attention itself once the groups are checked:
// with no launch cost and the cache in host memory, reading a shared
// block once per group saves this backend nothing worth a second code
// path, and Attention is the plain result the GPU kernels must equal.
func (be *Backend) AttentionSharedPrefix(out, lse, q, kCache, vCache, seq, pos, groups kernels.Buffer, pages kernels.KVPages, nTok, nHead, nKV, headDim int, scale float32, variant kernels.AttentionVariant) {
	const op = "AttentionSharedPrefix"
	positive(op, nTok, nHead, nKV, headDim)
	pages.Check(op)
	ss, ps := ints(op, "seq", seq, nTok), ints(op, "pos", pos, nTok)
	index(op, "seq", ss, pages.Seqs())
	index(op, "pos", ps, pages.MaxLen())
	floats(op, "q", q, nTok*nHead*headDim)
	bf16Query(op, q, kCache, headDim)
	bf16Out(op, "out", out, q)
	gs := ints(op, "groups", groups, nTok*kernels.PrefixGroupWords)
	table := ints(op, "pages.Table", pages.Table, pages.Table.Len())
	if err := kernels.CheckPrefixGroups(gs, table, pages.MaxBlocks, pages.BlockSize, ss, ps); err != nil {
		panic(fmt.Sprintf("cpu.%s: %v", op, err))
	}
	be.Attention(out, lse, q, kCache, vCache, seq, pos, pages, nTok, nHead, nKV, headDim, scale, variant)
}
