package cuda

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// decodeBlock threads per block of add_i32 (grid-stride) and of
// pcg_draw_f64 (one row per thread).
const decodeBlock = 256

func (b *Backend) AddI32(out, a, x kernels.Buffer, n int) {
	const op = "AddI32"
	i32(op, n)
	if n <= 0 {
		panic(fmt.Sprintf("cuda: AddI32: n = %d", n))
	}
	o := b.buf(op, "out", out, n, kernels.I32)
	aa := b.buf(op, "a", a, n, kernels.I32)
	xx := b.buf(op, "b", x, n, kernels.I32)
	if !usable(o, aa, xx) {
		return
	}
	b.elementwise("add_i32", n, o.ptr, aa.ptr, xx.ptr, int32(n))
	b.afterEachRun(func() { b.host.add(o.ptr, aa.ptr, xx.ptr, n) })
}

// SampleStream launches pcg_draw_f64, which writes each row's draw into
// its params (the u slot sample_f32 reads), then sample_f32 over the same
// params: two launches, nothing from the host.
func (b *Backend) SampleStream(token, logprob, logits, params, state kernels.Buffer, rows, vocab int) {
	const op = "SampleStream"
	i32(op, rows, vocab, rows*vocab, rows*kernels.SampleParamWords)
	if vocab <= 0 {
		panic(fmt.Sprintf("cuda: SampleStream: vocab %d", vocab))
	}
	t := b.buf(op, "token", token, rows, kernels.I32)
	lp := b.buf(op, "logprob", logprob, rows, kernels.F32)
	lg := b.buf(op, "logits", logits, rows*vocab, kernels.F32)
	pw := b.buf(op, "params", params, rows*kernels.SampleParamWords, kernels.I32)
	st := b.buf(op, "state", state, rows*kernels.PCGWords, kernels.I32)
	if rows == 0 || !usable(t, lp, lg, pw, st) {
		return
	}
	if pw.ptr%8 != 0 || st.ptr%8 != 0 {
		panic(fmt.Sprintf("cuda: SampleStream: params and state must start on an 8-byte boundary (an even element offset), got %#x and %#x", uintptr(pw.ptr), uintptr(st.ptr)))
	}
	b.launch("pcg_draw_f64", D1((rows+decodeBlock-1)/decodeBlock), D1(decodeBlock), 0, pw.ptr, st.ptr, int32(rows))
	b.launch("sample_f32", D1(rows), D1(warpRound(vocab, sampleMaxBlock)), 0, t.ptr, lp.ptr, lg.ptr, pw.ptr, int32(rows), int32(vocab))
}
