package bench

import (
	"math/rand/v2"

	"github.com/grpo-dev/grpo/kernels"
)

// measureMatMul returns the best GFLOP/s of C = A·Bᵀ (the layout of a linear
// layer) over repeat runs.
func measureMatMul(be kernels.Backend, m, n, k, repeat int) float64 {
	a, b, c := be.Alloc(kernels.F32, m*k), be.Alloc(kernels.F32, n*k), be.Alloc(kernels.F32, m*n)
	defer be.Free(a)
	defer be.Free(b)
	defer be.Free(c)
	rng := rand.New(rand.NewPCG(1, 2))
	fill := func(buf kernels.Buffer) {
		v := make([]float32, buf.Len())
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		be.Upload(buf, v)
	}
	fill(a)
	fill(b)
	d, _ := best(repeat, func() error {
		be.MatMul(c, a, b, m, n, k, false, true, 1, 0)
		be.Sync() // as before the move: a failed product shows as a rate, not an error
		return nil
	})
	return 2 * float64(m) * float64(n) * float64(k) / d.Seconds() / 1e9
}
