package cuda

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// gpt-oss's expert ops (moe_glu.cu).

func clampedGLUCheck(op string, c kernels.ClampedGLU, n int) {
	i32(op, n)
	if err := c.Check(); err != nil {
		panic(fmt.Sprintf("cuda: %s: %v", op, err))
	}
}

func (b *Backend) ClampedSwiGLU(out, gate, up kernels.Buffer, n int, c kernels.ClampedGLU) {
	const op = "ClampedSwiGLU"
	clampedGLUCheck(op, c, n)
	o := b.buf(op, "out", out, n, kernels.F32, kernels.BF16)
	g := b.buf(op, "gate", gate, n, kernels.F32, kernels.BF16)
	u := b.buf(op, "up", up, n, kernels.F32, kernels.BF16)
	if !usable(o, g, u) {
		return
	}
	if mask := bf16Mask(o, g, u); mask != 0 {
		b.elementwise("clamped_swiglu_as", n, o.ptr, g.ptr, u.ptr, int32(n), c.Alpha, c.Limit, mask)
		return
	}
	b.elementwise("clamped_swiglu_f32", n, o.ptr, g.ptr, u.ptr, int32(n), c.Alpha, c.Limit)
}

func (b *Backend) ClampedSwiGLUBackward(dgate, dup, dy, gate, up kernels.Buffer, n int, c kernels.ClampedGLU) {
	const op = "ClampedSwiGLUBackward"
	clampedGLUCheck(op, c, n)
	dg := b.buf(op, "dgate", dgate, n, kernels.F32, kernels.BF16)
	du := b.buf(op, "dup", dup, n, kernels.F32, kernels.BF16)
	d := b.buf(op, "dy", dy, n, kernels.F32, kernels.BF16)
	g := b.buf(op, "gate", gate, n, kernels.F32, kernels.BF16)
	u := b.buf(op, "up", up, n, kernels.F32, kernels.BF16)
	if !usable(dg, du, d, g, u) {
		return
	}
	if mask := bf16Mask(dg, du, d, g, u); mask != 0 {
		b.elementwise("clamped_swiglu_backward_as", n, dg.ptr, du.ptr, d.ptr, g.ptr, u.ptr, int32(n), c.Alpha, c.Limit, mask)
		return
	}
	b.elementwise("clamped_swiglu_backward_f32", n, dg.ptr, du.ptr, d.ptr, g.ptr, u.ptr, int32(n), c.Alpha, c.Limit)
}

func (b *Backend) GroupedAddBias(y, bias, offsets kernels.Buffer, rows, nExperts, cols int) {
	const op = "GroupedAddBias"
	i32(op, rows, nExperts, cols, rows*cols, nExperts*cols)
	if nExperts <= 0 || cols <= 0 || rows < 0 {
		panic(fmt.Sprintf("cuda: %s: rows %d, nExperts %d, cols %d: want positive sizes", op, rows, nExperts, cols))
	}
	yy := b.buf(op, "y", y, rows*cols, kernels.F32, kernels.BF16)
	bb := b.buf(op, "bias", bias, nExperts*cols, kernels.F32)
	o := b.buf(op, "offsets", offsets, nExperts+1, kernels.I32)
	if rows == 0 || !usable(yy, bb, o) {
		return
	}
	name := "grouped_add_bias_f32"
	if yy.dt == kernels.BF16 {
		name = "grouped_add_bias_ybf16"
	}
	b.launch(name, D1(rows), D1(warpRound(cols, 256)), 0, yy.ptr, bb.ptr, o.ptr, int32(nExperts), int32(cols))
}
