package cpu

import "github.com/grpo-dev/grpo/kernels"

// ReLU2 is max(x, 0)², in float64 and rounded once (as x·x in f32 is:
// the product of two floats rounds once either way). It reads x at an
// index before writing out there, so out may alias x.
func (be *Backend) ReLU2(out, x kernels.Buffer, n int) {
	const op = "ReLU2"
	positive(op, n)
	os, bf := floatsOut(op, "out", out, n)
	xs := floats(op, "x", x, n)
	be.parallel(n, 4, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			r := max(float64(xs[i]), 0)
			os[i] = roundIf(bf, float32(r*r))
		}
	})
}

// ReLU2Backward is dx = 2·max(x, 0)·dy, read before written, so dx may
// alias dy or x.
func (be *Backend) ReLU2Backward(dx, dy, x kernels.Buffer, n int) {
	const op = "ReLU2Backward"
	positive(op, n)
	dxs, bf := floatsOut(op, "dx", dx, n)
	ys, xs := floats(op, "dy", dy, n), floats(op, "x", x, n)
	be.parallel(n, 4, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			dxs[i] = roundIf(bf, float32(2*max(float64(xs[i]), 0)*float64(ys[i])))
		}
	})
}
