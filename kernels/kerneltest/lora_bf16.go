package kerneltest

import (
	"fmt"
	"strings"

	"github.com/grpo-dev/grpo/kernels"
)

// The LoRA cases with a bf16 activation operand (x or xa BF16), which a
// backend may run as a bf16 GEMM with f32 accumulation (kernels/cuda: on
// tensor cores, lora_tc.cu), rounding its F32 operands — the master
// weights A and B, the gradients dy and dxa, an f32 x — to bf16 as it
// stages them; the CPU backend multiplies in f32. Each output must then
// match the reference over the operands as stored (tolMatMul: the f32
// way) or the reference over the F32 operands rounded to bf16
// (tolMatMulBF16: only the f32 summation differs, see tol.go) — the
// choice MatMul allows for a bf16 B. A BF16 output (the shrink's xa) is
// checked with compareBF16Stored (every value a bf16 value, CompareBF16)
// against the same two references.
//
// The outputs the ops add into — the expand's Y, the shrink backward's dx
// — may also be BF16 (and the expand backward's dY): a backend reads
// them widened, sums in f32 and rounds once at the store, so each stored
// value must be a bf16 value (compareBF16Stored) within CompareBF16's
// bounds of the reference over the stored inputs: tolMatMul with an F32
// activation, compareBF16GEMM's choice with a BF16 one.

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
// (tolMatMulBF16); with bf16Out, got was stored rounded to bf16: every
// value must be a bf16 value and CompareBF16 applies the same two
// tolerances (compareBF16Stored).
func compareBF16GEMM(what string, got []float32, want, wantRounded []float64, bf16Out bool) error {
	cmp := Compare
	if bf16Out {
		cmp = compareBF16Stored
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

// compareLoRA checks a LoRA op's output: with bf16GEMM (a BF16 activation
// operand) as compareBF16GEMM does, else against want within tolMatMul;
// with bf16Out (a BF16 output) every value must be a bf16 value and the
// comparison is CompareBF16's (compareBF16Stored).
func compareLoRA(what string, got []float32, want, wantRounded []float64, bf16GEMM, bf16Out bool) error {
	if bf16GEMM {
		return compareBF16GEMM(what, got, want, wantRounded, bf16Out)
	}
	if bf16Out {
		return compareBF16Stored(what, got, want, tolMatMul)
	}
	return Compare(what, got, want, tolMatMul)
}

// loraDTypeRun is one run of every LoRA layout: its rows and the dtypes
// of xa and of the parts' Y (the expand's output, its backward's dY).
type loraDTypeRun struct {
	rows  int
	xa, y kernels.DType
}

// loraDTypeRuns: 1, 5 and 70 rows all F32, then 70 rows (past one 64-row
// tile) with a BF16 xa, BF16 Ys beside an F32 and a BF16 xa, and 5 rows
// with both BF16.
var loraDTypeRuns = []loraDTypeRun{{1, kernels.F32, kernels.F32}, {5, kernels.F32, kernels.F32}, {70, kernels.F32, kernels.F32},
	{70, kernels.BF16, kernels.F32}, {70, kernels.F32, kernels.BF16}, {70, kernels.BF16, kernels.BF16}, {5, kernels.BF16, kernels.BF16}}

// ySuffix is the case-name suffix of a run with BF16 Ys.
func (c loraDTypeRun) ySuffix() string {
	if c.y == kernels.BF16 {
		return ",Y=bf16"
	}
	return ""
}

// loRAMixedYCase requires op (LoRAExpand or LoRAExpandBackward) to panic,
// naming itself, when its parts' Ys differ in dtype.
func loRAMixedYCase(op string) Case {
	return trainCase(op, "parts' Y F32 and BF16 panics", func(b kernels.Backend, tb kernels.TrainOps) (err error) {
		e := newEnv(b, 4899)
		defer e.free()
		const rows = 2
		y0 := e.floats("Y0", kernels.F32, e.uniform(rows*4, 1), false)
		y1 := e.floats("Y1", kernels.BF16, e.uniform(rows*4, 1), false)
		bm := e.in("B", e.uniform(4, 1))
		xa, dxa := e.in("xa", e.uniform(rows*2, 1)), e.out("dxa", nans(rows*2))
		parts := []kernels.LoRAPart{{B: bm.view, Rank: 1, Out: 4, Scale: 1, Y: y0.view, YCols: 4},
			{B: bm.view, Rank: 1, Out: 4, Scale: 1, Y: y1.view, YCols: 4}}
		defer func() {
			r := recover()
			if msg := fmt.Sprint(r); r == nil || !strings.Contains(msg, op) || !strings.Contains(msg, "one Y dtype") {
				err = fmt.Errorf("%s with parts' Y F32 and BF16: recovered %v, want a panic naming the op", op, r)
			}
		}()
		if op == "LoRAExpand" {
			b.LoRAExpand(xa.view, parts, rows)
		} else {
			tb.LoRAExpandBackward(dxa.view, xa.view, parts, rows)
		}
		return nil
	})
}
