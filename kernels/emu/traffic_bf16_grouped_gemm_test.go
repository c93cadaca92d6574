package emu

import (
	"maps"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
)

// TestTrafficCountsBF16GroupedGEMMs holds cuda.Traffic of the grouped
// GEMMs over bf16 activations to the operands' dtypes, worked out by
// hand: a BF16 A or C of GroupedMatMul and GroupedMatMulMXFP4, and a BF16
// A or B of GroupedMatMulTN, count 2 bytes an element, the f32 ones (the
// LoRA factors as B, xa, the weight gradients) 4, the offsets 4, the
// MXFP4 codes and scales a byte each; the tagged bf16 experts never.
func TestTrafficCountsBF16GroupedGEMMs(t *testing.T) {
	b := New()
	defer b.Close()
	const experts, rows, k, n, rank = 2, 10, 64, 32, 8
	off := b.Alloc(kernels.I32, experts+1)
	b.UploadI32(off, []int32{0, 4, rows})
	x, y := b.Alloc(kernels.BF16, rows*k), b.Alloc(kernels.BF16, rows*n)
	xa, loraA := b.Alloc(kernels.F32, rows*rank), b.Alloc(kernels.F32, experts*rank*k)
	dA := b.Alloc(kernels.F32, experts*rank*k)
	w := b.Alloc(kernels.BF16, experts*n*k)
	codes, scales := b.Alloc(kernels.U8, experts*n*k/2), b.Alloc(kernels.U8, experts*n*k/32)
	b.TagWeights(w)
	bufs := []kernels.Buffer{x, y, xa, loraA, dA, w}
	for _, buf := range bufs {
		b.Upload(buf, make([]float32, buf.Len()))
	}
	b.UploadU8(codes, make([]byte, codes.Len()))
	b.UploadU8(scales, make([]byte, scales.Len()))
	tr := b.CountTraffic()
	b.GroupedMatMul(y, x, w, off, rows, experts, n, k, true, 1, 0)         // bf16 A, C; tagged bf16 B
	b.GroupedMatMul(xa, x, loraA, off, rows, experts, rank, k, true, 1, 0) // bf16 A, f32 C and B
	b.GroupedMatMulMXFP4(y, x, kernels.MXFP4{Codes: codes, Scales: scales}, off, rows, experts, n, k, true, 1, 1)
	b.GroupedMatMulTN(dA, xa, x, off, rows, experts, rank, k, 1, 1) // f32 A, bf16 B
	b.StopTraffic()
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	want := cuda.Traffic{
		"GroupedMatMul/C": 2*rows*n + 4*rows*rank, "GroupedMatMul/A": 2 * 2 * rows * k,
		"GroupedMatMul/B": 4 * experts * rank * k, "GroupedMatMul/offsets": 2 * 4 * (experts + 1),
		"GroupedMatMulMXFP4/C": 2 * rows * n, "GroupedMatMulMXFP4/A": 2 * rows * k, "GroupedMatMulMXFP4/offsets": 4 * (experts + 1),
		"GroupedMatMulMXFP4/B.Codes": experts * n * k / 2, "GroupedMatMulMXFP4/B.Scales": experts * n * k / 32,
		"GroupedMatMulTN/C": 4 * experts * rank * k, "GroupedMatMulTN/A": 4 * rows * rank, "GroupedMatMulTN/B": 2 * rows * k,
		"GroupedMatMulTN/offsets": 4 * (experts + 1),
		// beta 1: C read as well as written, at its dtype.
		"GroupedMatMulMXFP4/C beta": 2 * rows * n, "GroupedMatMulTN/C beta": 4 * experts * rank * k,
	}
	if !maps.Equal(tr, want) {
		t.Errorf("traffic %v, want %v", tr, want)
	}
	for _, buf := range append(bufs, off, codes, scales) {
		b.Free(buf)
	}
}
