package emu

import (
	"math/rand/v2"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

// uniformBuf uploads n values drawn uniformly from [lo, hi) by rng.
func uniformBuf(b *cuda.Backend, rng *rand.Rand, n int, lo, hi float64) kernels.Buffer {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(lo + (hi-lo)*rng.Float64())
	}
	x := b.Alloc(kernels.F32, n)
	b.Upload(x, v)
	return x
}

// ssdInputs are the buffers a scan and its backward read: xBC, dtRaw,
// aLog, dtBias and D, the slots' states, dy and dState, and the runs.
type ssdInputs struct {
	xBC, dtRaw, aLog, dtBias, dd, state, dy, dState, runs kernels.Buffer
	width, perSlot                                        int
}

// uploadSSDInputs draws a scan's inputs for tok tokens and slots slots of
// shape s from rng (in this order, so a seed fixes them): x, B and C and
// dy in [-1, 1), dtRaw in [-4, 2), aLog in [-1, 1), dtBias and D in
// [-0.5, 0.5), the states in [-0.5, 0.5) and dState in [-1, 1).
func uploadSSDInputs(b *cuda.Backend, rng *rand.Rand, s kerneltest.SSMShape, runs []int32, tok, slots int) ssdInputs {
	in := ssdInputs{width: s.NHeads*s.HeadDim + 2*s.NGroups*s.StateSize, perSlot: s.NHeads * s.HeadDim * s.StateSize}
	up := func(n int, lo, hi float64) kernels.Buffer { return uniformBuf(b, rng, n, lo, hi) }
	in.xBC, in.dtRaw = up(tok*in.width, -1, 1), up(tok*s.NHeads, -4, 2)
	in.aLog, in.dtBias, in.dd = up(s.NHeads, -1, 1), up(s.NHeads, -0.5, 0.5), up(s.NHeads, -0.5, 0.5)
	in.state, in.dy, in.dState = up(slots*in.perSlot, -0.5, 0.5), up(tok*s.NHeads*s.HeadDim, -1, 1), up(slots*in.perSlot, -1, 1)
	in.runs = b.Alloc(kernels.I32, len(runs))
	b.UploadI32(in.runs, runs)
	return in
}
