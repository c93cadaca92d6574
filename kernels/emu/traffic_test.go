package emu

import (
	"maps"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
)

// TestTrafficCountsActivationOperands holds cuda.Traffic to what each op's
// shapes say, worked out by hand: an Add of n f32 elements moves its three
// operands; a MatMul with bf16 weights and an f32 A moves A, the cast's
// bf16 copy (written, read back) and C, and C again when beta ≠ 0, never
// the tagged weights; with a bf16 A (a fused op's cast) there is no cast;
// nothing counts once StopTraffic has run.
func TestTrafficCountsActivationOperands(t *testing.T) {
	b := New()
	defer b.Close()
	const n, m, k, cols = 100, 6, 40, 24
	x, y, o := b.Alloc(kernels.F32, n), b.Alloc(kernels.F32, n), b.Alloc(kernels.F32, n)
	a, ab, c := b.Alloc(kernels.F32, m*k), b.Alloc(kernels.BF16, m*k), b.Alloc(kernels.F32, m*cols)
	w := b.Alloc(kernels.BF16, cols*k)
	b.TagWeights(w)
	tr := b.CountTraffic()
	b.Add(o, x, y, n)
	b.MatMul(c, a, w, m, cols, k, false, true, 1, 0)
	b.MatMul(c, ab, w, m, cols, k, false, true, 1, 1)
	b.StopTraffic()
	b.Add(o, x, y, n)
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	want := cuda.Traffic{
		"Add/out": 4 * n, "Add/a": 4 * n, "Add/b": 4 * n,
		"MatMul/A":      4*m*k + 2*m*k, // f32 A read by the cast; bf16 A read by the GEMM
		"MatMul/A cast": 2 * 2 * m * k,
		"MatMul/C":      2 * 4 * m * cols,
		"MatMul/C beta": 4 * m * cols,
	}
	if !maps.Equal(tr, want) {
		t.Errorf("traffic %v, want %v", tr, want)
	}
	if got, w := tr.Total(), int64(12*n+6*m*k+4*m*k+12*m*cols); got != w {
		t.Errorf("total %d, want %d", got, w)
	}
	for _, buf := range []kernels.Buffer{x, y, o, a, ab, c, w} {
		b.Free(buf)
	}
}
