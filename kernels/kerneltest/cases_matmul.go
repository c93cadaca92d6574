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

// matMulBF16CCases: a BF16 C with a BF16 B, A in f32 or bf16, all four
// transposes, beta = 0 over a NaN-filled C and beta ≠ 0 over a C holding
// bf16 values, odd sizes. Every stored value must be a bf16 value, the
// rounding of the result the reference allows (CompareBF16): against the
// f32-A reference within tolMatMul (the CPU backend) or against the one
// with A rounded to bf16 within tolMatMulBF16 (a bf16×bf16 GEMM). Then
// the mixes with an F32 B (matMulF32BCases).
func matMulBF16CCases() []Case {
	shapes := [][3]int{{1, 1, 1}, {5, 7, 9}, {17, 13, 33}, {64, 48, 96}}
	scales := [][2]float32{{1, 0}, {-1.25, 0.75}}
	var cs []Case
	for i, s := range shapes {
		for _, at := range []kernels.DType{kernels.F32, kernels.BF16} {
			for tr := 0; tr < 4; tr++ {
				for j, ab := range scales {
					m, n, k := s[0], s[1], s[2]
					tA, tB, alpha, beta := tr&1 != 0, tr&2 != 0, ab[0], ab[1]
					seed := uint64(4700 + 100*i + 20*int(at) + 2*tr + j)
					name := fmt.Sprintf("m=%d,n=%d,k=%d,tA=%v,tB=%v,A=%v,B=bf16,C=bf16,alpha=%g,beta=%g", m, n, k, tA, tB, at, alpha, beta)
					cs = append(cs, Case{Op: "MatMul", Name: name, check: func(b kernels.Backend) error {
						return checkMatMulMixed(b, seed, m, n, k, tA, tB, at, kernels.BF16, kernels.BF16, alpha, beta)
					}})
				}
			}
		}
	}
	return append(cs, matMulF32BCases()...)
}

// matMulF32BCases: an F32 B (weights a checkpoint ships in f32: a router,
// an MLP, a head) with a BF16 A or C (a bf16 layer's activations), every
// mix but all-f32, in the shapes and scales of matMulBF16CCases. A bf16
// A is used as it is (its values are exact in f32) and the product is an
// f32 one, so the result is held to the reference within tolMatMul, a
// BF16 C rounded once at the store (CompareBF16).
func matMulF32BCases() []Case {
	shapes := [][3]int{{1, 1, 1}, {5, 7, 9}, {17, 13, 33}, {64, 48, 96}}
	scales := [][2]float32{{1, 0}, {-1.25, 0.75}}
	mixes := [][2]kernels.DType{{kernels.BF16, kernels.F32}, {kernels.F32, kernels.BF16}, {kernels.BF16, kernels.BF16}}
	var cs []Case
	for i, s := range shapes {
		for x, ac := range mixes {
			for tr := 0; tr < 4; tr++ {
				for j, ab := range scales {
					m, n, k := s[0], s[1], s[2]
					tA, tB, alpha, beta := tr&1 != 0, tr&2 != 0, ab[0], ab[1]
					seed := uint64(5700 + 100*i + 20*x + 2*tr + j)
					name := fmt.Sprintf("m=%d,n=%d,k=%d,tA=%v,tB=%v,A=%v,B=f32,C=%v,alpha=%g,beta=%g", m, n, k, tA, tB, ac[0], ac[1], alpha, beta)
					cs = append(cs, Case{Op: "MatMul", Name: name, check: func(b kernels.Backend) error {
						return checkMatMulMixed(b, seed, m, n, k, tA, tB, ac[0], kernels.F32, ac[1], alpha, beta)
					}})
				}
			}
		}
	}
	return cs
}

// checkMatMulMixed runs one MatMul with A, B and C in at, bt and ct. A
// BF16 C must hold bf16 values only, within the tolerance by CompareBF16.
// With a BF16 B and an F32 A a backend may round A to bf16 (a bf16×bf16
// GEMM), held then to that reference within tolMatMulBF16.
func checkMatMulMixed(b kernels.Backend, seed uint64, m, n, k int, tA, tB bool, at, bt, ct kernels.DType, alpha, beta float32) error {
	e := newEnv(b, seed)
	defer e.free()
	a := e.floats("A", at, e.uniform(m*k, 1), true)
	bm := e.floats("B", bt, e.uniform(k*n, 1), true)
	cInit := nans(m * n) // beta == 0 must overwrite NaN
	if beta != 0 {
		cInit = e.uniform(m*n, 1) // rounded to bf16 at upload when C is
	}
	c := e.floats("C", ct, cInit, false)
	want := RefMatMul(a.values(), bm.values(), c.values(), m, n, k, tA, tB, float64(alpha), float64(beta))
	b.MatMul(c.view, a.view, bm.view, m, n, k, tA, tB, alpha, beta)
	if err := e.checkAll(); err != nil {
		return err
	}
	got := c.result(b)
	compare := Compare
	if ct == kernels.BF16 {
		for i, g := range got {
			if RoundBF16(g) != g {
				return fmt.Errorf("C[%d] = %.8g is not a bf16 value", i, g)
			}
		}
		compare = CompareBF16
	}
	if at == kernels.BF16 && bt == kernels.BF16 {
		return compare("C", got, want, tolMatMulBF16)
	}
	errF32 := compare("C", got, want, tolMatMul)
	if errF32 == nil || bt == kernels.F32 {
		return errF32
	}
	ar := a.values()
	for i, v := range ar {
		ar[i] = float64(RoundBF16(float32(v)))
	}
	wantBF16 := RefMatMul(ar, bm.values(), c.values(), m, n, k, tA, tB, float64(alpha), float64(beta))
	if err := compare("C", got, wantBF16, tolMatMulBF16); err != nil {
		return fmt.Errorf("%v (A in f32); %v (A rounded to bf16)", errF32, err)
	}
	return nil
}
