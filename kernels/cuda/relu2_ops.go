package cuda

import "github.com/grpo-dev/grpo/kernels"

func (b *Backend) ReLU2(out, x kernels.Buffer, n int) {
	const op = "ReLU2"
	positive(op, n)
	i32(op, n)
	o := b.buf(op, "out", out, n, kernels.F32, kernels.BF16)
	xx := b.buf(op, "x", x, n, kernels.F32, kernels.BF16)
	if !usable(o, xx) {
		return
	}
	if mask := bf16Mask(o, xx); mask != 0 {
		b.elementwise("relu2_as", n, o.ptr, xx.ptr, int32(n), mask)
		return
	}
	b.elementwise("relu2_f32", n, o.ptr, xx.ptr, int32(n))
}

func (b *Backend) ReLU2Backward(dx, dy, x kernels.Buffer, n int) {
	const op = "ReLU2Backward"
	positive(op, n)
	i32(op, n)
	d := b.buf(op, "dx", dx, n, kernels.F32, kernels.BF16)
	y := b.buf(op, "dy", dy, n, kernels.F32, kernels.BF16)
	xx := b.buf(op, "x", x, n, kernels.F32, kernels.BF16)
	if !usable(d, y, xx) {
		return
	}
	if mask := bf16Mask(d, y, xx); mask != 0 {
		b.elementwise("relu2_backward_as", n, d.ptr, y.ptr, xx.ptr, int32(n), mask)
		return
	}
	b.elementwise("relu2_backward_f32", n, d.ptr, y.ptr, xx.ptr, int32(n))
}
