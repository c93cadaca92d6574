package emu

import (
	"maps"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
)

// TestTrafficCountsSSMBF16 holds cuda.Traffic, for a Mamba-2 layer's scan
// and gated norm over bf16 activations, to the operands' dtypes worked
// out by hand: a BF16 xBC, y, dy, dxBC (the scan) and x, z, out, dy, dx,
// dz (the norm) count 2 bytes an element; dtRaw, ddtRaw, the states, rstd
// and the runs 4; the tagged aLog, dtBias, d and w never count. The
// backward's pooled scratch is not an operand.
func TestTrafficCountsSSMBF16(t *testing.T) {
	b := New()
	defer b.Close()
	const nTok, nHeads, headDim, nGroups, stateSize = 10, 4, 8, 2, 16
	const width, ny, per = nHeads*headDim + 2*nGroups*stateSize, nTok * nHeads * headDim, nHeads * headDim * stateSize
	const rows, dim, groups = nTok, nHeads * headDim, nGroups
	bf, f := kernels.BF16, kernels.F32
	xBC, y, dy, dxBC := b.Alloc(bf, nTok*width), b.Alloc(bf, ny), b.Alloc(bf, ny), b.Alloc(bf, nTok*width)
	dtRaw, ddt, state, dState := b.Alloc(f, nTok*nHeads), b.Alloc(f, nTok*nHeads), b.Alloc(f, per), b.Alloc(f, per)
	aLog, dtBias, d := b.Alloc(f, nHeads), b.Alloc(f, nHeads), b.Alloc(f, nHeads)
	z, out, dx, dz, rstd, w := b.Alloc(bf, rows*dim), b.Alloc(bf, rows*dim), b.Alloc(bf, rows*dim), b.Alloc(bf, rows*dim), b.Alloc(f, rows*groups), b.Alloc(f, dim)
	runs := b.Alloc(kernels.I32, 4)
	b.UploadI32(runs, []int32{0, nTok, -1, 0})
	b.TagWeights(aLog, dtBias, d, w)
	bufs := []kernels.Buffer{xBC, y, dy, dxBC, dtRaw, ddt, state, dState, aLog, dtBias, d, z, out, dx, dz, rstd, w}
	for _, buf := range bufs {
		b.Upload(buf, make([]float32, buf.Len()))
	}
	tr := b.CountTraffic()
	b.SSDScan(y, xBC, dtRaw, aLog, dtBias, d, state, runs, 1, nTok, nHeads, headDim, nGroups, stateSize)
	b.SSDScanBackward(dxBC, ddt, dState, dy, xBC, dtRaw, aLog, dtBias, d, state, runs, 1, nTok, nHeads, headDim, nGroups, stateSize)
	b.GroupedGatedRMSNorm(out, rstd, y, z, w, rows, dim, groups, 1e-5)
	b.GroupedGatedRMSNormBackward(dx, dz, dy, y, z, w, rstd, rows, dim, groups)
	b.StopTraffic()
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	want := cuda.Traffic{
		"SSDScan/y": 2 * ny, "SSDScan/xBC": 2 * nTok * width, "SSDScan/dtRaw": 4 * nTok * nHeads, "SSDScan/state": 4 * per, "SSDScan/runs": 16,
		"SSDScanBackward/dxBC": 2 * nTok * width, "SSDScanBackward/ddtRaw": 4 * nTok * nHeads, "SSDScanBackward/dy": 2 * ny,
		"SSDScanBackward/xBC": 2 * nTok * width, "SSDScanBackward/dtRaw": 4 * nTok * nHeads, "SSDScanBackward/state": 4 * per,
		"SSDScanBackward/dState": 4 * per, "SSDScanBackward/runs": 16,
		"GroupedGatedRMSNorm/out": 2 * rows * dim, "GroupedGatedRMSNorm/rstd": 4 * rows * groups, "GroupedGatedRMSNorm/x": 2 * rows * dim,
		"GroupedGatedRMSNorm/z":          2 * rows * dim,
		"GroupedGatedRMSNormBackward/dx": 2 * rows * dim, "GroupedGatedRMSNormBackward/dz": 2 * rows * dim,
		"GroupedGatedRMSNormBackward/dy": 2 * rows * dim, "GroupedGatedRMSNormBackward/x": 2 * rows * dim,
		"GroupedGatedRMSNormBackward/z": 2 * rows * dim, "GroupedGatedRMSNormBackward/rstd": 4 * rows * groups,
	}
	if !maps.Equal(tr, want) {
		t.Errorf("traffic %v, want %v", tr, want)
	}
	for _, buf := range append(bufs, runs) {
		b.Free(buf)
	}
}
