package emu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

// ssdDetRuns: a run of 150 tokens (three chunks, the last partial) from
// slot 0 into slot 1, then three runs (20, 70 and 9 tokens) that share
// init slot 2 — a GRPO group's completions after their prompt — one of
// them into slot 3. Arrival order would decide how B's and C's gradients
// sum over a group's heads (and over a head's rows and the chunk's
// tokens), ddt over a head's rows, and slot 2's gradient over its three
// runs.
var ssdDetRuns = []int32{0, 150, 0, 1, 150, 20, 2, -1, 170, 70, 2, 3, 240, 9, 2, -1}

const ssdDetTok, ssdDetSlots = 249, 4

// ssdDetShape has three heads in each of two groups.
var ssdDetShape = kerneltest.SSMShape{NHeads: 6, HeadDim: 8, NGroups: 2, StateSize: 32}

// ssdBackwardRun is one SSDScanBackward of ssdDetRuns on path with the
// blocks handed out in order o, on a fresh emulated device: dxBC, ddtRaw
// and dState as downloaded, and the launches and atomic operations the
// call made.
func ssdBackwardRun(t *testing.T, path cuda.SSDPath, o BlockOrder) (r [3][]float32, launches int64, atomics uint64) {
	t.Helper()
	s := ssdDetShape
	d := NewDevice()
	b := newBackend(d)
	defer b.Close()
	b.SetSSDPath(path)
	rng := rand.New(rand.NewPCG(41, 7))
	in := uploadSSDInputs(b, rng, s, ssdDetRuns, ssdDetTok, ssdDetSlots)
	// Not zeroed: the backward overwrites them.
	dxBC, ddt := uniformBuf(b, rng, ssdDetTok*in.width, -9, 9), uniformBuf(b, rng, ssdDetTok*s.NHeads, -9, 9)
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	prev := SetBlockOrder(o)
	before, atomicsBefore := b.Counts(), d.AtomicsTotal()
	b.SSDScanBackward(dxBC, ddt, in.dState, in.dy, in.xBC, in.dtRaw, in.aLog, in.dtBias, in.dd, in.state, in.runs, len(ssdDetRuns)/4, ssdDetTok,
		s.NHeads, s.HeadDim, s.NGroups, s.StateSize)
	err := b.Sync()
	SetBlockOrder(prev)
	if err != nil {
		t.Fatal(err)
	}
	launches, atomics = b.Counts().Sub(before).Launches, d.AtomicsTotal()-atomicsBefore
	for i, x := range []kernels.Buffer{dxBC, ddt, in.dState} {
		r[i] = downloadBuf(b, x)
	}
	return r, launches, atomics
}

// TestSSDBackwardDeterministic: on each path the scan's backward makes no
// atomic operation and gives bit-identical dxBC, ddtRaw and dState run
// after run and with the blocks taken in reverse order (which reverses
// the order atomics would arrive in), in 3 launches (the backward and
// its two fixed-order sums: B and C over a group's heads, an init slot's
// gradient over its runs).
func TestSSDBackwardDeterministic(t *testing.T) {
	for _, p := range []struct {
		name string
		path cuda.SSDPath
	}{{"recurrent", cuda.SSDRecurrent}, {"chunked", cuda.SSDChunked}} {
		t.Run(p.name, func(t *testing.T) {
			ref, launches, atomics := ssdBackwardRun(t, p.path, Forward)
			if launches != 3 || atomics != 0 {
				t.Errorf("the backward: %d launches and %d atomic operations, want 3 and 0", launches, atomics)
			}
			for _, o := range []BlockOrder{Forward, Reverse} {
				got, _, _ := ssdBackwardRun(t, p.path, o)
				for i, name := range []string{"dxBC", "ddtRaw", "dState"} {
					for j := range ref[i] {
						if math.Float32bits(got[i][j]) != math.Float32bits(ref[i][j]) {
							t.Errorf("block order %d: %s[%d] = %g, first run %g: not bit-identical", o, name, j, got[i][j], ref[i][j])
							break
						}
					}
				}
			}
		})
	}
}
