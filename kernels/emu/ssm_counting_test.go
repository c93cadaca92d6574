package emu

import (
	"math/rand/v2"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
)

// ssmCall is one Mamba-2 decode step's scan operands on a backend.
type ssmCall struct {
	y, xBC, dtRaw, aLog, dtBias, d, state, runs kernels.Buffer
}

const ssmHeads, ssmHeadDim, ssmGroups, ssmStateSize = 4, 8, 2, 128

func newSSMCall(b kernels.Backend, seqs int, rng *rand.Rand) ssmCall {
	f := func(n int, scale float32) kernels.Buffer {
		v := make([]float32, n)
		for i := range v {
			v[i] = scale * (2*rng.Float32() - 1)
		}
		x := b.Alloc(kernels.F32, n)
		b.Upload(x, v)
		return x
	}
	width := ssmHeads*ssmHeadDim + 2*ssmGroups*ssmStateSize
	runs := b.Alloc(kernels.I32, 4*seqs)
	b.UploadI32(runs, decodeRuns(seqs))
	return ssmCall{
		y: f(seqs*ssmHeads*ssmHeadDim, 0), xBC: f(seqs*width, 1), dtRaw: f(seqs*ssmHeads, 2),
		aLog: f(ssmHeads, 1), dtBias: f(ssmHeads, 0.5), d: f(ssmHeads, 0.5),
		state: f(seqs*ssmHeads*ssmHeadDim*ssmStateSize, 0.5), runs: runs,
	}
}

func (c ssmCall) forward(b kernels.Backend, seqs int) {
	b.SSDScan(c.y, c.xBC, c.dtRaw, c.aLog, c.dtBias, c.d, c.state, c.runs, seqs, seqs, ssmHeads, ssmHeadDim, ssmGroups, ssmStateSize)
}

// TestDecodeSSDScanIsOneKernelAndReplays: a Mamba-2 decode step's scan
// for 16 sequences (runs of one token in and out of their own slots) is
// one kernel that allocates nothing and waits for nothing; captured once
// and replayed twice, it advances the states as two more CPU steps do.
func TestDecodeSSDScanIsOneKernelAndReplays(t *testing.T) {
	const seqs = 16
	b := New()
	defer b.Close()
	ref := cpu.New()
	c, r := newSSMCall(b, seqs, rand.New(rand.NewPCG(7, 7))), newSSMCall(ref, seqs, rand.New(rand.NewPCG(7, 7)))
	c.forward(b, seqs) // warm-up
	r.forward(ref, seqs)
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	before := b.Counts()
	c.forward(b, seqs)
	r.forward(ref, seqs)
	if got := b.Counts().Sub(before); got.Launches != 1 || got.Allocs != 0 || got.Memsets != 0 || got.Syncs != 0 || got.HtoD != 0 || got.DtoH != 0 {
		t.Fatalf("a decode step of %d sequences: %v; want 1 launch and no allocation, memset, copy or wait", seqs, got)
	}
	if err := b.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	c.forward(b, seqs)
	g, err := b.EndCapture()
	if err != nil {
		t.Fatalf("capturing a decode step: %v", err)
	}
	defer b.FreeGraph(g)
	before = b.Counts()
	b.Replay(g)
	b.Replay(g)
	if got := b.Counts().Sub(before); got.GraphLaunches != 2 || got.GraphKernels != 2 || got.Launches != 0 || got.Allocs != 0 {
		t.Fatalf("2 replays: %v; want 2 graph launches of 1 kernel each", got)
	}
	r.forward(ref, seqs)
	r.forward(ref, seqs)
	for _, p := range []struct {
		what     string
		got, ref kernels.Buffer
	}{{"y", c.y, r.y}, {"state", c.state, r.state}} {
		gv, rv := downloadBuf(b, p.got), downloadBuf(ref, p.ref)
		for i := range rv {
			if d := gv[i] - rv[i]; d > 1e-5 || d < -1e-5 {
				t.Fatalf("%s[%d] after 2 replays = %v, the CPU's after 2 more steps %v", p.what, i, gv[i], rv[i])
			}
		}
	}
}
