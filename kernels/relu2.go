package kernels

// ReLU2Ops are the squared ReLU of Nemotron-H's MLPs and experts
// (transformers' ACT2FN["relu2"]): down(relu(up·x)²) has no gate, so
// neither SwiGLU nor a GLU op expresses it.
type ReLU2Ops interface {
	// ReLU2 writes out = max(x, 0)² over n elements; out may alias x (of
	// its dtype). out and x may each be F32 or BF16 (read widened, a BF16
	// out rounded once).
	ReLU2(out, x Buffer, n int)

	// ReLU2Backward writes dx = 2·max(x, 0)·dy over n elements (0 where
	// x ≤ 0, the derivative's value at the kink); dx may alias dy or x (of
	// its dtype). dx, dy and x may each be F32 or BF16, as ReLU2's.
	ReLU2Backward(dx, dy, x Buffer, n int)
}
