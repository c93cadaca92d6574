package kerneltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// matMulCases cover degenerate sizes (m, n or k = 1), odd sizes, all four
// transpose combinations, F32 and BF16 B, beta = 0 over a NaN-filled C, and
// general alpha/beta. With a BF16 B the result must match the f32-A
// reference (tolMatMul) or the one with A rounded to bf16 (tolMatMulBF16).
func matMulCases() []Case {
	shapes := [][3]int{{1, 1, 1}, {1, 9, 7}, {9, 1, 7}, {5, 7, 1}, {17, 13, 33}, {33, 65, 31}, {64, 48, 96}, {70, 130, 257}}
	scales := [][2]float32{{1, 0}, {0.5, 0.75}, {-1.25, 1}}
	var cs []Case
	seed := uint64(100)
	for _, s := range shapes {
		for _, bt := range []kernels.DType{kernels.F32, kernels.BF16} {
			for tr := 0; tr < 4; tr++ {
				for _, ab := range scales {
					m, n, k := s[0], s[1], s[2]
					tA, tB := tr&1 != 0, tr&2 != 0
					alpha, beta := ab[0], ab[1]
					seed++
					sd := seed
					name := fmt.Sprintf("m=%d,n=%d,k=%d,tA=%v,tB=%v,B=%v,alpha=%g,beta=%g", m, n, k, tA, tB, bt, alpha, beta)
					cs = append(cs, Case{Op: "MatMul", Name: name, check: func(b kernels.Backend) error {
						return checkMatMul(b, sd, m, n, k, tA, tB, bt, alpha, beta)
					}})
				}
			}
		}
	}
	return cs
}

func checkMatMul(b kernels.Backend, seed uint64, m, n, k int, tA, tB bool, bt kernels.DType, alpha, beta float32) error {
	e := newEnv(b, seed)
	defer e.free()
	a := e.in("A", e.uniform(m*k, 1))
	bm := e.floats("B", bt, e.uniform(k*n, 1), true)
	cInit := nans(m * n) // beta == 0 must overwrite NaN
	if beta != 0 {
		cInit = e.uniform(m*n, 1)
	}
	c := e.out("C", cInit)
	want := RefMatMul(a.values(), bm.values(), c.values(), m, n, k, tA, tB, float64(alpha), float64(beta))
	b.MatMul(c.view, a.view, bm.view, m, n, k, tA, tB, alpha, beta)
	if err := e.checkAll(); err != nil {
		return err
	}
	got := c.result(b)
	errF32 := Compare("C", got, want, tolMatMul)
	if bt == kernels.F32 || errF32 == nil {
		return errF32
	}
	// With a BF16 B a backend may instead round A to bf16 and run a
	// bf16×bf16 GEMM with f32 sums (kernels/cuda: cublasGemmEx), as a bf16
	// matmul in PyTorch does; it is then held to that reference.
	ar := a.values()
	for i, v := range ar {
		ar[i] = float64(RoundBF16(float32(v)))
	}
	wantBF16 := RefMatMul(ar, bm.values(), c.values(), m, n, k, tA, tB, float64(alpha), float64(beta))
	if err := Compare("C", got, wantBF16, tolMatMulBF16); err != nil {
		return fmt.Errorf("%v (A in f32); %v (A rounded to bf16)", errF32, err)
	}
	return nil
}
