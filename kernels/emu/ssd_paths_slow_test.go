//go:build slow

// The scan on each forced path: slow (about 90 s, the recurrent backward
// most of it), so CI runs it with -tags slow and `go test ./...` does not
// (TestConformance runs every case on the path its shape picks).

package emu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

// TestSSDScanPaths runs the scan's conformance cases (kerneltest's
// SSDScan and SSDScanBackward: runs of 1, 63, 64, 65 and 200 tokens,
// several runs in one call, init and final slots, a shared init slot,
// groups fewer than heads, large and tiny dt) on each forced path: the
// recurrent kernels of ssd_scan.cu and the chunked ones of ssd_chunked.cu
// and ssd_chunked_backward.cu, each against the float64 reference.
// (TestConformance runs them on the path each shape picks.)
func TestSSDScanPaths(t *testing.T) {
	for _, p := range []struct {
		name string
		path cuda.SSDPath
	}{{"recurrent", cuda.SSDRecurrent}, {"chunked", cuda.SSDChunked}} {
		t.Run(p.name, func(t *testing.T) {
			b := New()
			defer b.Close()
			b.SetSSDPath(p.path)
			if err := kerneltest.Check(b, "SSDScan", "SSDScanBackward"); err != nil {
				t.Error(err)
			}
		})
	}
}

// ssdPathRuns: a fresh run of 200 tokens into slot 0, and two runs from
// slot 1 (65 tokens into slot 2, 64 into none) — three chunks and a
// partial one, a chunk and one token, exactly one chunk.
var ssdPathRuns = []int32{0, 200, -1, 0, 200, 65, 1, 2, 265, 64, 1, -1}

const ssdPathTok, ssdPathSlots = 329, 3

// ssdPathShape is Nemotron-3-Nano's head (headDim 64, stateSize 128) with
// 4 heads in 2 groups.
var ssdPathShape = kerneltest.SSMShape{NHeads: 4, HeadDim: 64, NGroups: 2, StateSize: 128}

// ssdPathResults are a forward and a backward on one path: y, the states
// after, dxBC, ddtRaw and dState.
type ssdPathResults [5][]float32

func runSSDPath(t *testing.T, path cuda.SSDPath) (ssdPathResults, uint64) {
	s := ssdPathShape
	d := NewDevice()
	b := newBackend(d)
	defer b.Close()
	b.SetSSDPath(path)
	in := uploadSSDInputs(b, rand.New(rand.NewPCG(31, 3)), s, ssdPathRuns, ssdPathTok, ssdPathSlots)
	y, after := b.Alloc(kernels.F32, ssdPathTok*s.NHeads*s.HeadDim), b.Alloc(kernels.F32, ssdPathSlots*in.perSlot)
	dxBC, ddt := b.Alloc(kernels.F32, ssdPathTok*in.width), b.Alloc(kernels.F32, ssdPathTok*s.NHeads)
	nRuns := len(ssdPathRuns) / 4
	b.Copy(after, in.state)
	b.SSDScan(y, in.xBC, in.dtRaw, in.aLog, in.dtBias, in.dd, after, in.runs, nRuns, ssdPathTok, s.NHeads, s.HeadDim, s.NGroups, s.StateSize)
	// The backward from the state before: no run writes its init slot.
	b.SSDScanBackward(dxBC, ddt, in.dState, in.dy, in.xBC, in.dtRaw, in.aLog, in.dtBias, in.dd, in.state, in.runs, nRuns, ssdPathTok,
		s.NHeads, s.HeadDim, s.NGroups, s.StateSize)
	var r ssdPathResults
	for i, x := range []kernels.Buffer{y, after, dxBC, ddt, in.dState} {
		r[i] = downloadBuf(b, x)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	return r, d.ReadBytes("ssd_chunked_f32")
}

// TestSSDChunkedEqualsRecurrent: on Nemotron-3-Nano's head shape, over
// runs that cross chunk boundaries, the chunked kernels' outputs and
// gradients equal the recurrent kernels' within 1e-5 of each output's
// scale (max|chunked − recurrent| / max|recurrent|; measured ≤ 5.3e-7:
// two f32 orders of summation). The chunked forward reads each
// head's x, B and C once (ReadBytes); the recurrent path runs no chunked
// kernel.
func TestSSDChunkedEqualsRecurrent(t *testing.T) {
	rec, recReads := runSSDPath(t, cuda.SSDRecurrent)
	chk, chkReads := runSSDPath(t, cuda.SSDChunked)
	s := ssdPathShape
	if want := uint64(4 * ssdPathTok * s.NHeads * (s.HeadDim + 2*s.StateSize)); recReads != 0 || chkReads != want {
		t.Errorf("ssd_chunked_f32 read %d bytes on the recurrent path and %d on the chunked one; want 0 and %d", recReads, chkReads, want)
	}
	for i, what := range []string{"y", "state", "dxBC", "ddtRaw", "dState"} {
		var scale, diff float64
		for j, v := range rec[i] {
			scale = math.Max(scale, math.Abs(float64(v)))
			diff = math.Max(diff, math.Abs(float64(chk[i][j])-float64(v)))
		}
		t.Logf("%s: max|chunked − recurrent| = %.3g of scale %.3g (%.2g)", what, diff, scale, diff/scale)
		if !(diff <= 1e-5*scale) || scale == 0 {
			t.Errorf("%s: max|chunked − recurrent| = %.3g, more than 1e-5 of the scale %.3g", what, diff, scale)
		}
	}
}
