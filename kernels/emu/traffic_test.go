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

// TestTrafficCountsBF16C: a MatMul into a bf16 C moves C at 2 bytes an
// element, written and (beta ≠ 0) read, beside the operands of the f32-C
// case; each is still one GEMM of the Counts, reading the tagged weights
// at 2 bytes an element and no more.
func TestTrafficCountsBF16C(t *testing.T) {
	b := New()
	defer b.Close()
	const m, k, cols = 6, 40, 24
	a, ab, c := b.Alloc(kernels.F32, m*k), b.Alloc(kernels.BF16, m*k), b.Alloc(kernels.BF16, m*cols)
	w := b.Alloc(kernels.BF16, cols*k)
	b.TagWeights(w)
	before := b.Counts()
	tr := b.CountTraffic()
	b.MatMul(c, a, w, m, cols, k, false, true, 1, 0)
	b.MatMul(c, ab, w, m, cols, k, false, true, 1, 1)
	b.StopTraffic()
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	counts := b.Counts().Sub(before)
	want := cuda.Traffic{
		"MatMul/A":      4*m*k + 2*m*k,
		"MatMul/A cast": 2 * 2 * m * k,
		"MatMul/C":      2 * 2 * m * cols,
		"MatMul/C beta": 2 * m * cols,
	}
	if !maps.Equal(tr, want) {
		t.Errorf("traffic %v, want %v", tr, want)
	}
	if counts.GEMMs != 2 || counts.Launches != 1 || counts.WeightBytes != 2*2*cols*k || counts.FLOPs != 2*2*m*cols*k {
		t.Errorf("counts %v, want 2 GEMMs, 1 launch (the cast), %d weight bytes, %d FLOPs", counts, 2*2*cols*k, 2*2*m*cols*k)
	}
	for _, buf := range []kernels.Buffer{a, ab, c, w} {
		b.Free(buf)
	}
}

// TestTrafficCountsBF16Add: a bf16 operand of Add or AddBias moves
// 2 bytes an element, an f32 one 4 (the residual add of a bf16 block
// output: out and a f32, b bf16; a bf16 x with an f32 bias).
func TestTrafficCountsBF16Add(t *testing.T) {
	b := New()
	defer b.Close()
	const n, rows, cols = 100, 3, 40
	x, o, h := b.Alloc(kernels.F32, n), b.Alloc(kernels.F32, n), b.Alloc(kernels.BF16, n)
	xb, bias := b.Alloc(kernels.BF16, rows*cols), b.Alloc(kernels.F32, cols)
	tr := b.CountTraffic()
	b.Add(o, x, h, n)
	b.Add(h, h, h, n)
	b.AddBias(xb, bias, rows, cols)
	b.StopTraffic()
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	want := cuda.Traffic{
		"Add/out": 4*n + 2*n, "Add/a": 4*n + 2*n, "Add/b": 2*n + 2*n,
		"AddBias/x": 2 * rows * cols, "AddBias/bias": 4 * cols,
	}
	if !maps.Equal(tr, want) {
		t.Errorf("traffic %v, want %v", tr, want)
	}
	for _, buf := range []kernels.Buffer{x, o, h, xb, bias} {
		b.Free(buf)
	}
}

// TestTrafficCountsLoRABF16Operands holds the LoRA ops' counts with bf16
// activations to their shapes: a BF16 xa, x, parts' Y (the expand's
// output, read and written; its backward's dY) and dx at 2 bytes an
// element, the F32 dxa and gradients (dxa, DB, dA) at 4, the tagged
// weights A and B not at all.
func TestTrafficCountsLoRABF16Operands(t *testing.T) {
	b := New()
	defer b.Close()
	const rows, in, rank, out, yCols, yOff = 6, 40, 3, 16, 24, 5
	x, xa := b.Alloc(kernels.BF16, rows*in), b.Alloc(kernels.BF16, rows*rank)
	y, dy, dx := b.Alloc(kernels.BF16, rows*yCols), b.Alloc(kernels.BF16, rows*yCols), b.Alloc(kernels.BF16, rows*in)
	dxa, da, db := b.Alloc(kernels.F32, rows*rank), b.Alloc(kernels.F32, rank*in), b.Alloc(kernels.F32, out*rank)
	a, bm := b.Alloc(kernels.F32, rank*in), b.Alloc(kernels.F32, out*rank)
	b.TagWeights(a)
	b.TagWeights(bm)
	part := kernels.LoRAPart{B: bm, Rank: rank, Out: out, Scale: 2, Y: y, YCols: yCols, YOff: yOff}
	grad := part
	grad.Y, grad.DB = dy, db
	tr := b.CountTraffic()
	b.LoRAExpand(xa, []kernels.LoRAPart{part}, rows)
	b.LoRAExpandBackward(dxa, xa, []kernels.LoRAPart{grad}, rows)
	b.LoRAShrinkBackward(dx, da, dxa, x, a, rows, in, rank)
	b.StopTraffic()
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	want := cuda.Traffic{
		"LoRAExpand/xa": 2 * rows * rank, "LoRAExpand/parts' Y": 2 * 2 * rows * out,
		"LoRAExpandBackward/dxa": 4 * rows * rank, "LoRAExpandBackward/xa": 2 * rows * rank,
		"LoRAExpandBackward/part 0 DB": 4 * out * rank, "LoRAExpandBackward/parts' Y": 2 * 2 * rows * out,
		"LoRAShrinkBackward/dx": 2 * rows * in, "LoRAShrinkBackward/x": 2 * rows * in,
		"LoRAShrinkBackward/dxa": 4 * rows * rank, "LoRAShrinkBackward/da": 4 * rank * in,
	}
	if !maps.Equal(tr, want) {
		t.Errorf("traffic %v, want %v", tr, want)
	}
	for _, buf := range []kernels.Buffer{x, xa, y, dy, dx, dxa, da, db, a, bm} {
		b.Free(buf)
	}
}

// TestTrafficCountsF32BMixes: a MatMul with f32 weights and a bf16 A
// widens A into an f32 copy (written, read by the GEMM); into a bf16 C
// it sums into an f32 copy of C (written by the GEMM, read by the
// rounding), with C widened into it first when beta ≠ 0 (written, read);
// two launches (the widening and the rounding) beside the GEMM when both
// are bf16 and beta ≠ 0, none with all-f32 operands.
func TestTrafficCountsF32BMixes(t *testing.T) {
	b := New()
	defer b.Close()
	const m, k, cols = 6, 40, 24
	ab, cb := b.Alloc(kernels.BF16, m*k), b.Alloc(kernels.BF16, m*cols)
	w := b.Alloc(kernels.F32, cols*k)
	b.TagWeights(w)
	before := b.Counts()
	tr := b.CountTraffic()
	b.MatMul(cb, ab, w, m, cols, k, false, true, 1, 1)
	b.StopTraffic()
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	counts := b.Counts().Sub(before)
	want := cuda.Traffic{
		"MatMul/A":       2 * m * k,
		"MatMul/A widen": 2 * 4 * m * k,
		"MatMul/C":       2 * m * cols,
		"MatMul/C beta":  2 * m * cols,
		"MatMul/C widen": 2 * 4 * m * cols,
		"MatMul/C f32":   2 * 4 * m * cols,
	}
	if !maps.Equal(tr, want) {
		t.Errorf("traffic %v, want %v", tr, want)
	}
	if counts.GEMMs != 1 || counts.Launches != 3 {
		t.Errorf("%d GEMMs and %d launches, want 1 and 3 (widen A, widen C, round C)", counts.GEMMs, counts.Launches)
	}
	for _, buf := range []kernels.Buffer{ab, cb, w} {
		b.Free(buf)
	}
}
