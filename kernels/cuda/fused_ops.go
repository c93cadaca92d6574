package cuda

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// The fused ops (kernels.FusedOps, fused.cu), in the pattern of ops.go.

// optBufOf is optBuf for an optional operand of dtype dt.
func (b *Backend) optBufOf(op, name string, x kernels.Buffer, n int, dt kernels.DType) *buffer {
	if x == nil {
		return &buffer{owner: b}
	}
	return b.buf(op, name, x, n, dt)
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
	o := b.buf(op, "out", out, n, kernels.F32)
	c := b.optBufOf(op, "outBF16", outBF16, n, kernels.BF16)
	rs := b.optBuf(op, "rstd", rstd, rows)
	xx := b.buf(op, "x", x, n, kernels.F32)
	rr := b.optBuf(op, "r", r, n)
	ww := b.buf(op, "w", w, dim, kernels.F32, kernels.BF16)
	if !usable(s, o, c, rs, xx, rr, ww) {
		return
	}
	name := "add_rmsnorm_f32"
	if ww.dt == kernels.BF16 {
		name = "add_rmsnorm_wbf16"
	}
	b.launch(name, D1(rows), D1(rowBlock), 0, s.ptr, o.ptr, c.ptr, rs.ptr, xx.ptr, rr.ptr, ww.ptr, int32(rows), int32(dim), eps)
}

func (b *Backend) SwiGLURows(out, outBF16, gateUp kernels.Buffer, rows, width int) {
	const op = "SwiGLURows"
	positive(op, rows, width)
	i32(op, 2*rows*width)
	o := b.buf(op, "out", out, rows*width, kernels.F32)
	c := b.optBufOf(op, "outBF16", outBF16, rows*width, kernels.BF16)
	gu := b.buf(op, "gateUp", gateUp, 2*rows*width, kernels.F32)
	if !usable(o, c, gu) {
		return
	}
	b.elementwise("swiglu_rows_f32", rows*width, o.ptr, c.ptr, gu.ptr, int32(rows), int32(width))
}

func (b *Backend) SwiGLURowsBackward(dGateUp, dy, gateUp kernels.Buffer, rows, width int) {
	const op = "SwiGLURowsBackward"
	positive(op, rows, width)
	i32(op, 2*rows*width)
	d := b.buf(op, "dGateUp", dGateUp, 2*rows*width, kernels.F32)
	y := b.buf(op, "dy", dy, rows*width, kernels.F32)
	gu := b.buf(op, "gateUp", gateUp, 2*rows*width, kernels.F32)
	if !usable(d, y, gu) {
		return
	}
	b.elementwise("swiglu_rows_backward_f32", rows*width, d.ptr, y.ptr, gu.ptr, int32(rows), int32(width))
}
