package emu

import (
	"maps"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
)

// TestTrafficCountsBF16MoE holds cuda.Traffic, for the MoE row ops and
// expert activations over mixed f32/bf16 activations, to the operands'
// dtypes worked out by hand: a BF16 operand counts 2 bytes an element,
// an F32 or I32 one 4, the tagged bias never. GatherRows' untagged table
// counts every row it reads, here rows·hd bf16 values.
func TestTrafficCountsBF16MoE(t *testing.T) {
	b := New()
	defer b.Close()
	const n, k, hd, mi, ne = 3, 2, 40, 24, 2
	const rows = n * k
	f, h := kernels.F32, kernels.BF16
	alloc := func(dt kernels.DType, size int) kernels.Buffer {
		x := b.Alloc(dt, size)
		b.Upload(x, make([]float32, size))
		return x
	}
	x, xp, yp, sum := alloc(h, n*hd), alloc(h, rows*hd), alloc(h, rows*hd), alloc(h, n*hd)
	dsum, dyp, ypF := alloc(h, n*hd), alloc(h, rows*hd), alloc(f, rows*hd)
	weights, dw := alloc(f, rows), alloc(f, rows)
	fused, gate, up, act := alloc(h, rows*2*mi), alloc(h, rows*mi), alloc(f, rows*mi), alloc(h, rows*mi)
	dAct, dGate, dUp := alloc(h, rows*mi), alloc(f, rows*mi), alloc(h, rows*mi)
	bias := b.Alloc(f, ne*2*mi)
	b.TagWeights(bias)
	tokens, rowsBuf, offsets := b.Alloc(kernels.I32, rows), b.Alloc(kernels.I32, rows), b.Alloc(kernels.I32, ne+1)
	b.UploadI32(tokens, []int32{0, 0, 1, 1, 2, 2})
	b.UploadI32(rowsBuf, []int32{0, 3, 1, 4, 2, 5})
	b.UploadI32(offsets, []int32{0, 3, rows})
	tr := b.CountTraffic()
	b.GatherRows(xp, x, tokens, rows, hd)
	b.GroupedAddBias(fused, bias, offsets, rows, ne, 2*mi)
	b.CopyColumns(gate, fused, rows, mi, mi, 0, 2*mi, 0)
	b.CopyColumns(up, fused, rows, mi, mi, 0, 2*mi, mi)
	b.SwiGLU(act, gate, up, rows*mi)
	b.ClampedSwiGLU(act, gate, up, rows*mi, kernels.ClampedGLU{Alpha: 1.702, Limit: 7})
	b.ReLU2(act, up, rows*mi)
	b.MoECombine(sum, yp, weights, rowsBuf, n, k, hd)
	b.MoECombineBackward(dyp, dw, dsum, ypF, weights, rowsBuf, n, k, hd)
	b.SwiGLUBackward(dGate, dUp, dAct, gate, up, rows*mi)
	b.ClampedSwiGLUBackward(dGate, dUp, dAct, gate, up, rows*mi, kernels.ClampedGLU{Alpha: 1.702, Limit: 7})
	b.ReLU2Backward(dUp, dAct, up, rows*mi)
	b.StopTraffic()
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	const g = rows * mi
	want := cuda.Traffic{
		"GatherRows/out": 2 * rows * hd, "GatherRows/table": 2 * rows * hd, "GatherRows/idx": 4 * rows,
		"GroupedAddBias/y": 2 * rows * 2 * mi, "GroupedAddBias/offsets": 4 * (ne + 1),
		"CopyColumns/dst": 2*g + 4*g, "CopyColumns/src": 2 * 2 * (rows * 2 * mi),
		"SwiGLU/out": 2 * g, "SwiGLU/gate": 2 * g, "SwiGLU/up": 4 * g,
		"ClampedSwiGLU/out": 2 * g, "ClampedSwiGLU/gate": 2 * g, "ClampedSwiGLU/up": 4 * g,
		"ReLU2/out": 2 * g, "ReLU2/x": 4 * g,
		"MoECombine/out": 2 * n * hd, "MoECombine/x": 2 * rows * hd, "MoECombine/weights": 4 * rows, "MoECombine/rows": 4 * rows,
		"MoECombineBackward/dx": 2 * rows * hd, "MoECombineBackward/dweights": 4 * rows, "MoECombineBackward/dout": 2 * n * hd,
		"MoECombineBackward/x": 4 * rows * hd, "MoECombineBackward/weights": 4 * rows, "MoECombineBackward/rows": 4 * rows,
		"SwiGLUBackward/dgate": 4 * g, "SwiGLUBackward/dup": 2 * g, "SwiGLUBackward/dy": 2 * g, "SwiGLUBackward/gate": 2 * g, "SwiGLUBackward/up": 4 * g,
		"ClampedSwiGLUBackward/dgate": 4 * g, "ClampedSwiGLUBackward/dup": 2 * g, "ClampedSwiGLUBackward/dy": 2 * g,
		"ClampedSwiGLUBackward/gate": 2 * g, "ClampedSwiGLUBackward/up": 4 * g,
		"ReLU2Backward/dx": 2 * g, "ReLU2Backward/dy": 2 * g, "ReLU2Backward/x": 4 * g,
	}
	if !maps.Equal(tr, want) {
		t.Errorf("traffic %v, want %v", tr, want)
	}
	for _, buf := range []kernels.Buffer{x, xp, yp, sum, dsum, dyp, ypF, weights, dw, fused, gate, up, act, dAct, dGate, dUp, bias, tokens, rowsBuf, offsets} {
		b.Free(buf)
	}
}
