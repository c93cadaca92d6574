package kerneltest

import "math"

// Plain float64 references of gpt-oss's expert ops, written from
// transformers' GptOssExperts._apply_gate and its Linear biases.

// RefClampedSwiGLU returns (clamp(up, ±limit) + 1)·g·σ(alpha·g) with g =
// min(gate, limit).
func RefClampedSwiGLU(gate, up []float64, alpha, limit float64) []float64 {
	out := make([]float64, len(gate))
	for i := range gate {
		g := math.Min(gate[i], limit)
		u := math.Min(math.Max(up[i], -limit), limit)
		out[i] = (u + 1) * g / (1 + math.Exp(-alpha*g))
	}
	return out
}

// RefClampedSwiGLUBackward returns its gradients given dy: d/dg of
// g·σ(αg) is σ + αg·σ·(1 − σ); the clamps pass gradient inside their
// bounds, bounds included (torch.clamp's backward).
func RefClampedSwiGLUBackward(dy, gate, up []float64, alpha, limit float64) (dgate, dup []float64) {
	dgate, dup = make([]float64, len(dy)), make([]float64, len(dy))
	for i := range dy {
		g := math.Min(gate[i], limit)
		u := math.Min(math.Max(up[i], -limit), limit)
		s := 1 / (1 + math.Exp(-alpha*g))
		if gate[i] <= limit {
			dgate[i] = dy[i] * (u + 1) * (s + alpha*g*s*(1-s))
		}
		if up[i] >= -limit && up[i] <= limit {
			dup[i] = dy[i] * g * s
		}
	}
	return dgate, dup
}

// RefGroupedAddBias returns y with bias row e added to expert e's rows.
func RefGroupedAddBias(y, bias []float64, offsets []int32, nExperts, cols int) []float64 {
	out := append([]float64(nil), y...)
	for e := range nExperts {
		for r := offsets[e]; r < offsets[e+1]; r++ {
			for j := range cols {
				out[int(r)*cols+j] += bias[e*cols+j]
			}
		}
	}
	return out
}
