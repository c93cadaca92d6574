package emu

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels"
)

// TestTrafficCountsBF16Attention: the bf16 activations between ops that
// the output gate and the tensor-core attention read and write are
// counted at 2 bytes an element, their f32 neighbours at 4: SigmoidGate
// and SigmoidGateBackward with mixed operands, Attention's bf16 out and
// AttentionBackward's bf16 dq, dout and out beside its f32 dk, dv and lse.
func TestTrafficCountsBF16Attention(t *testing.T) {
	b := New()
	defer b.Close()
	const n = 100
	const nTok, nHead, nKV, headDim, maxLen = 8, 4, 2, 64, 8
	nq, nc := nTok*nHead*headDim, maxLen*nKV*headDim
	f, h := func(k int) kernels.Buffer { return b.Alloc(kernels.F32, k) }, func(k int) kernels.Buffer { return b.Alloc(kernels.BF16, k) }
	x, g, o := f(n), h(n), h(n)
	dx, dg, dy := h(n), f(n), h(n)
	q, k, v, out, lse := h(nq), h(nc), h(nc), h(nq), f(nTok*nHead)
	dq, dk, dv, dout := h(nq), f(nc), f(nc), h(nq)
	zero := func(xs ...kernels.Buffer) {
		for _, x := range xs {
			b.Upload(x, make([]float32, x.Len()))
		}
	}
	zero(x, g, dy, q, k, v, dout, dk, dv)
	seqv, posv := make([]int32, nTok), make([]int32, nTok)
	for i := range posv {
		posv[i] = int32(i)
	}
	seq, pos, table := b.Alloc(kernels.I32, nTok), b.Alloc(kernels.I32, nTok), b.Alloc(kernels.I32, 1)
	b.UploadI32(seq, seqv)
	b.UploadI32(pos, posv)
	b.UploadI32(table, []int32{0})
	pages := kernels.KVPages{Table: table, BlockSize: maxLen, MaxBlocks: 1}
	tr := b.CountTraffic()
	b.SigmoidGate(o, x, g, n)
	b.SigmoidGateBackward(dx, dg, dy, x, g, n)
	b.Attention(out, lse, q, k, v, seq, pos, pages, nTok, nHead, nKV, headDim, 0.125, kernels.AttentionVariant{})
	b.AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v, seq, pos, pages, nTok, nHead, nKV, headDim, 0.125, kernels.AttentionVariant{})
	b.StopTraffic()
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]int64{
		"SigmoidGate/out": 2 * n, "SigmoidGate/x": 4 * n, "SigmoidGate/gate": 2 * n,
		"SigmoidGateBackward/dx": 2 * n, "SigmoidGateBackward/dgate": 4 * n, "SigmoidGateBackward/dy": 2 * n,
		"SigmoidGateBackward/x": 4 * n, "SigmoidGateBackward/gate": 2 * n,
		"Attention/out": 2 * int64(nq), "Attention/q": 2 * int64(nq), "Attention/lse": 4 * nTok * nHead,
		"AttentionBackward/dq": 2 * int64(nq), "AttentionBackward/dout": 2 * int64(nq), "AttentionBackward/out": 2 * int64(nq),
		"AttentionBackward/dk": 4 * int64(nc), "AttentionBackward/lse": 4 * nTok * nHead,
	} {
		if tr[key] != want {
			t.Errorf("%s: %d bytes, want %d", key, tr[key], want)
		}
	}
}
