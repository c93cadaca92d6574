package emu

import (
	"maps"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
)

// TestTrafficCountsBF16Activations holds cuda.Traffic, for the norms and
// SwiGLU over bf16 activations, to the operands' dtypes worked out by
// hand: a BF16 r, gateUp, dy or dGateUp counts 2 bytes an element, the
// f32 residual stream (x, sum), dx and rstd 4; an absent out (only the
// bf16 copy stored) or dxBF16 counts nothing, and the tagged weights
// never count.
func TestTrafficCountsBF16Activations(t *testing.T) {
	b := New()
	defer b.Close()
	const rows, dim, width = 3, 40, 24
	const n, g = rows * dim, rows * width
	x, sum, rstd, dx := b.Alloc(kernels.F32, n), b.Alloc(kernels.F32, n), b.Alloc(kernels.F32, rows), b.Alloc(kernels.F32, n)
	r, normed, dy, dxb := b.Alloc(kernels.BF16, n), b.Alloc(kernels.BF16, n), b.Alloc(kernels.BF16, n), b.Alloc(kernels.BF16, n)
	gateUp, act, dAct, dGateUp := b.Alloc(kernels.BF16, 2*g), b.Alloc(kernels.BF16, g), b.Alloc(kernels.BF16, g), b.Alloc(kernels.BF16, 2*g)
	w := b.Alloc(kernels.BF16, dim)
	b.TagWeights(w)
	bufs := []kernels.Buffer{x, sum, rstd, dx, r, normed, dy, dxb, gateUp, act, dAct, dGateUp, w}
	for _, buf := range bufs {
		if buf != w {
			b.Upload(buf, make([]float32, buf.Len()))
		}
	}
	tr := b.CountTraffic()
	b.AddRMSNorm(sum, nil, normed, rstd, x, r, w, rows, dim, 1e-6)
	b.SwiGLURows(nil, act, gateUp, rows, width)
	b.SwiGLURowsBackward(dGateUp, dAct, gateUp, rows, width)
	b.RMSNormBackward(dx, dxb, dy, x, w, rstd, rows, dim, true)
	b.StopTraffic()
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	want := cuda.Traffic{
		"AddRMSNorm/sum": 4 * n, "AddRMSNorm/outBF16": 2 * n, "AddRMSNorm/rstd": 4 * rows, "AddRMSNorm/x": 4 * n, "AddRMSNorm/r": 2 * n,
		"SwiGLURows/outBF16": 2 * g, "SwiGLURows/gateUp": 2 * 2 * g,
		"SwiGLURowsBackward/dGateUp": 2 * 2 * g, "SwiGLURowsBackward/dy": 2 * g, "SwiGLURowsBackward/gateUp": 2 * 2 * g,
		"RMSNormBackward/dx": 4 * n, "RMSNormBackward/dxBF16": 2 * n, "RMSNormBackward/dy": 2 * n, "RMSNormBackward/x": 4 * n,
		"RMSNormBackward/rstd": 4 * rows,
	}
	if !maps.Equal(tr, want) {
		t.Errorf("traffic %v, want %v", tr, want)
	}
	// Without the bf16 copy of dx, RMSNormBackward moves 2n bytes fewer.
	tr = b.CountTraffic()
	b.RMSNormBackward(dx, nil, dy, x, w, rstd, rows, dim, true)
	b.StopTraffic()
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, ok := tr["RMSNormBackward/dxBF16"]; ok || tr.Total() != int64(4*n+2*n+4*n+4*rows) {
		t.Errorf("RMSNormBackward without dxBF16: traffic %v, want dx, dy, x and rstd only (%d bytes)", tr, 4*n+2*n+4*n+4*rows)
	}
	for _, buf := range bufs {
		b.Free(buf)
	}
}
