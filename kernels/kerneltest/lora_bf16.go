package kerneltest

import "fmt"

// The LoRA cases with a bf16 activation operand (x or xa BF16), which a
// backend may run as a bf16 GEMM with f32 accumulation (kernels/cuda: on
// tensor cores, lora_tc.cu), rounding its F32 operands — the master
// weights A and B, the gradients dy and dxa, an f32 x — to bf16 as it
// stages them; the CPU backend multiplies in f32. Each output must then
// match the reference over the operands as stored (tolMatMul: the f32
// way) or the reference over the F32 operands rounded to bf16
// (tolMatMulBF16: only the f32 summation differs, see tol.go) — the
// choice MatMul allows for a bf16 B. A BF16 output (the shrink's xa) is
// checked with CompareBF16 against the same two references.

// roundedBF16 is vals rounded to bf16, as a tensor-core kernel stages an
// f32 operand.
func roundedBF16(vals []float64) []float64 {
	r := make([]float64, len(vals))
	for i, v := range vals {
		r[i] = float64(RoundBF16(float32(v)))
	}
	return r
}

// compareBF16GEMM checks got against want (tolMatMul) or wantRounded
// (tolMatMulBF16); with bf16Out, got was stored rounded to bf16 and
// CompareBF16 applies the same two tolerances.
func compareBF16GEMM(what string, got []float32, want, wantRounded []float64, bf16Out bool) error {
	cmp := Compare
	if bf16Out {
		cmp = CompareBF16
	}
	errF32 := cmp(what, got, want, tolMatMul)
	if errF32 == nil {
		return nil
	}
	if err := cmp(what, got, wantRounded, tolMatMulBF16); err != nil {
		return fmt.Errorf("%v (f32 products); %v (f32 operands rounded to bf16)", errF32, err)
	}
	return nil
}
