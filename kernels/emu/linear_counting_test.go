package emu

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
)

// What the DeltaNet ops ask of the GPU, counted under emu: a decode step
// of the gated delta rule is one kernel with no allocation, copy or wait
// and replays from a graph; a prefill is one kernel; a backward is three
// (zeroing its scratch, the walk, the l2 norms) and, once the pool holds
// its scratch, allocates nothing either.

// deltaCall is one GatedDeltaRule call's operands on a backend.
type deltaCall struct {
	out, qkv, g, beta, state, runs    kernels.Buffer
	nRuns, nTok, nHK, nHV, dimK, dimV int
}

func newDeltaCall(b kernels.Backend, runs []int32, nTok, slots int, rng *rand.Rand) *deltaCall {
	c := &deltaCall{nRuns: len(runs) / 4, nTok: nTok, nHK: 2, nHV: 4, dimK: 32, dimV: 16}
	width := 2*c.nHK*c.dimK + c.nHV*c.dimV
	vals := func(n int, lo, hi float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(lo + (hi-lo)*rng.Float64())
		}
		return v
	}
	up := func(v []float32) kernels.Buffer { x := b.Alloc(kernels.F32, len(v)); b.Upload(x, v); return x }
	c.qkv, c.g, c.beta = up(vals(nTok*width, -1, 1)), up(vals(nTok*c.nHV, -1, -0.01)), up(vals(nTok*c.nHV, 0.1, 0.9))
	c.state = up(vals(slots*c.nHV*c.dimK*c.dimV, -0.5, 0.5))
	c.out = b.Alloc(kernels.F32, nTok*c.nHV*c.dimV)
	c.runs = b.Alloc(kernels.I32, len(runs))
	b.UploadI32(c.runs, runs)
	return c
}

func (c *deltaCall) forward(b kernels.Backend) {
	b.GatedDeltaRule(c.out, c.qkv, c.g, c.beta, c.state, c.runs, c.nRuns, c.nTok, c.nHK, c.nHV, c.dimK, c.dimV)
}

func downloadBuf(b kernels.Backend, x kernels.Buffer) []float32 {
	v := make([]float32, x.Len())
	b.Download(v, x)
	return v
}

// decodeRuns: n sequences of one token each, each in and out of its slot.
func decodeRuns(n int) []int32 {
	runs := make([]int32, 0, 4*n)
	for i := range n {
		runs = append(runs, int32(i), 1, int32(i), int32(i))
	}
	return runs
}

func TestDecodeGatedDeltaRuleIsOneKernelAndReplays(t *testing.T) {
	const seqs = 16
	b := New()
	defer b.Close()
	ref := cpu.New()
	c := newDeltaCall(b, decodeRuns(seqs), seqs, seqs, rand.New(rand.NewPCG(1, 1)))
	r := newDeltaCall(ref, decodeRuns(seqs), seqs, seqs, rand.New(rand.NewPCG(1, 1)))
	c.forward(b) // warm-up
	r.forward(ref)
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	before := b.Counts()
	c.forward(b)
	r.forward(ref)
	got := b.Counts().Sub(before)
	if got.Launches != 1 || got.Allocs != 0 || got.Memsets != 0 || got.Syncs != 0 || got.HtoD != 0 || got.DtoH != 0 {
		t.Fatalf("a decode step of %d sequences: %v; want 1 launch and no allocation, memset, copy or wait", seqs, got)
	}
	// Captured once, replayed twice: the state advances two more steps,
	// as two more calls do on the CPU.
	if err := b.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	c.forward(b)
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
	r.forward(ref)
	r.forward(ref)
	for _, p := range []struct {
		what     string
		got, ref kernels.Buffer
	}{{"out", c.out, r.out}, {"state", c.state, r.state}} {
		gv, rv := downloadBuf(b, p.got), downloadBuf(ref, p.ref)
		for i := range rv {
			if d := gv[i] - rv[i]; d > 1e-5 || d < -1e-5 {
				t.Fatalf("%s[%d] after 2 replays = %v, the CPU's after 2 more steps %v", p.what, i, gv[i], rv[i])
			}
		}
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
}

func TestGatedDeltaRuleLaunchesAndPool(t *testing.T) {
	b := New()
	defer b.Close()
	// Two prompts of 70 and 3 tokens, fresh, into slots 0 and 1.
	runs := []int32{0, 70, -1, 0, 70, 3, -1, 1}
	c := newDeltaCall(b, runs, 73, 2, rand.New(rand.NewPCG(2, 2)))
	before := b.Counts()
	c.forward(b)
	if got := b.Counts().Sub(before); got.Launches != 1 || got.Allocs != 0 || got.Syncs != 0 {
		t.Fatalf("a prefill of 2 runs: %v; want 1 launch (the chunked kernel), no allocation, no wait", got)
	}
	width := 2*c.nHK*c.dimK + c.nHV*c.dimV
	dqkv, dg, dbeta := b.Alloc(kernels.F32, c.nTok*width), b.Alloc(kernels.F32, c.nTok*c.nHV), b.Alloc(kernels.F32, c.nTok*c.nHV)
	dState, dout := b.Alloc(kernels.F32, c.state.Len()), b.Alloc(kernels.F32, c.out.Len())
	b.Fill(dout, 1, c.out.Len())
	backward := func() {
		b.GatedDeltaRuleBackward(dqkv, dg, dbeta, dState, dout, c.qkv, c.g, c.beta, c.state, c.runs, c.nRuns, c.nTok, c.nHK, c.nHV, c.dimK, c.dimV)
	}
	backward() // the pool learns the scratch sizes
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	before = b.Counts()
	backward()
	if got := b.Counts().Sub(before); got.Launches != 3 || got.Allocs != 0 || got.Frees != 0 || got.Syncs != 0 {
		t.Fatalf("a backward after a warm-up: %v; want 3 launches (zero scratch, walk, l2 norms) and no allocation, free or wait", got)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
}

// TestGatedDeltaRuleSharedLimit: heads too large for a block's shared
// memory even after opting in are refused in Go, naming the sizes.
func TestGatedDeltaRuleSharedLimit(t *testing.T) {
	b := New()
	defer b.Close()
	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(msg, "dimK 256 × dimV 256") {
			t.Fatalf("want a panic naming dimK 256 × dimV 256, got %q", msg)
		}
	}()
	x := b.Alloc(kernels.F32, 1)
	b.GatedDeltaRule(x, x, x, x, nil, x, 0, 0, 1, 1, 256, 256)
}

// TestDecodeLinearMixerOpsAreFourKernels: the device ops of one decode
// step of a DeltaNet layer (gates, convolution, delta rule, gated norm)
// for 8 sequences are one kernel each, allocate nothing, wait for
// nothing, and capture into a graph together.
func TestDecodeLinearMixerOpsAreFourKernels(t *testing.T) {
	const seqs, channels, kernel = 8, 64 + 64 + 64, 4
	b := New()
	defer b.Close()
	c := newDeltaCall(b, decodeRuns(seqs), seqs, seqs, rand.New(rand.NewPCG(3, 3)))
	heads := c.nHV
	f := func(n int) kernels.Buffer { return b.Alloc(kernels.F32, n) }
	a, bb, aLog, dt := f(seqs*heads), f(seqs*heads), f(heads), f(heads)
	x, w, convState := f(seqs*channels), f(channels*kernel), f(seqs*(kernel-1)*channels)
	conv := f(seqs * channels)
	z, nw, normed := f(seqs*heads*c.dimV), f(c.dimV), f(seqs*heads*c.dimV)
	b.Fill(nw, 1, c.dimV)
	step := func() {
		b.DeltaGates(c.g, c.beta, a, bb, aLog, dt, seqs, heads)
		b.CausalConv1D(conv, x, w, nil, convState, c.runs, seqs, seqs, channels, kernel)
		c.forward(b)
		b.GatedRMSNorm(normed, nil, c.out, z, nw, seqs*heads, c.dimV, 1e-6)
	}
	step()
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	before := b.Counts()
	step()
	if got := b.Counts().Sub(before); got.Launches != 4 || got.Allocs != 0 || got.Memsets != 0 || got.Syncs != 0 || got.HtoD != 0 {
		t.Fatalf("a DeltaNet layer's decode ops: %v; want 4 launches and no allocation, memset, copy or wait", got)
	}
	if err := b.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	step()
	g, err := b.EndCapture()
	if err != nil {
		t.Fatalf("capturing a DeltaNet layer's decode ops: %v", err)
	}
	b.Replay(g)
	b.FreeGraph(g)
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
}
