package emu

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

// The GPU's launch limits, enforced by emu (cuda.KernelFigures.CheckLaunch
// with the committed ptxas figures), so CI fails where the GPU would.

// TestDynamicSharedNeedsOptIn: 64 KiB of dynamic shared memory is refused
// without SetMaxDynamicShared, with a message saying so, and runs after it.
func TestDynamicSharedNeedsOptIn(t *testing.T) {
	d := NewDevice()
	defer d.Close()
	in := upload(t, d, make([]float32, 32))
	out, _ := d.Alloc(4)
	const shared = 64 << 10
	err := d.Launch("demo/demo_block_sum_missing_sync", cuda.D1(1), cuda.D1(32), shared, out, in, int32(32))
	if err == nil || !strings.Contains(err.Error(), "65536 bytes of dynamic shared memory") || !strings.Contains(err.Error(), "without opting in") {
		t.Fatalf("64 KiB of dynamic shared memory without the opt-in: error %v, want one saying it needs opting in", err)
	}
	t.Logf("refused as the GPU would: %v", err)
	if err := d.SetMaxDynamicShared("demo/demo_block_sum_missing_sync", shared); err != nil {
		t.Fatal(err)
	}
	if err := d.Launch("demo/demo_block_sum_missing_sync", cuda.D1(1), cuda.D1(32), shared, out, in, int32(32)); err != nil {
		t.Fatalf("after opting in: %v", err)
	}
	if err := d.Launch("demo/demo_block_sum_missing_sync", cuda.D1(1), cuda.D1(32), shared+4, out, in, int32(32)); err == nil {
		t.Error("a launch beyond the opted-in size was accepted")
	}
	if err := d.SetMaxDynamicShared("demo/demo_block_sum_missing_sync", 228<<10); err == nil {
		t.Error("opting in beyond sm_90's 227 KiB was accepted")
	}
}

// TestRegistersTimesThreads: a kernel whose registers × threads exceed the
// 65,536 registers of a block fails to launch, naming both figures; at the
// size that fits it runs.
func TestRegistersTimesThreads(t *testing.T) {
	d := NewDevice()
	defer d.Close()
	out, _ := d.Alloc(8)
	d.SetFigures("demo/demo_atomic_count", cuda.KernelFigures{Registers: 72})
	err := d.Launch("demo/demo_atomic_count", cuda.D1(1), cuda.D1(1024), 0, out)
	if err == nil || !strings.Contains(err.Error(), "72 registers per thread × 1024 threads needs 73728 registers") {
		t.Fatalf("72 registers × 1024 threads: error %v, want the register file exceeded", err)
	}
	t.Logf("refused as the GPU would: %v", err)
	if err := d.Launch("demo/demo_atomic_count", cuda.D1(1), cuda.D1(896), 0, out); err != nil {
		t.Fatalf("72 registers × 896 threads (64,512) fits: %v", err)
	}
	// Granularity: 65 registers are allocated as 72.
	d.SetFigures("demo/demo_atomic_count", cuda.KernelFigures{Registers: 65})
	if err := d.Launch("demo/demo_atomic_count", cuda.D1(1), cuda.D1(1024), 0, out); err == nil {
		t.Error("65 registers (allocated as 72) × 1024 threads was accepted")
	}
}

// TestLaunchBoundsEnforced: a real kernel launched with more threads than
// its __launch_bounds__ (from the committed PTX) fails, and so does a
// planted variant of it.
func TestLaunchBoundsEnforced(t *testing.T) {
	d := NewDevice()
	defer d.Close()
	p, _ := d.Alloc(4 * 512)
	for _, name := range []string{"add_f32", "planted/attention_f32"} {
		var err error
		if name == "add_f32" {
			err = d.Launch(name, cuda.D1(1), cuda.D1(512), 0, p, p, p, int32(512))
		} else {
			err = d.Launch(name, cuda.D2(1, 1), cuda.D1(256), 0, p, p, p, p, p, p, p, int32(1), int32(1), int32(1), int32(1), int32(1), float32(1))
		}
		if err == nil || !strings.Contains(err.Error(), "__launch_bounds__") {
			t.Errorf("%s beyond its launch bounds: error %v, want one naming __launch_bounds__", name, err)
		}
	}
}

// TestStaticSharedFilledPerBlock: every block finds its static shared
// memory filled with 0xFF, never what the previous block on the same thread
// left there (which a GPU does not promise either).
func TestStaticSharedFilledPerBlock(t *testing.T) {
	d := NewDevice()
	defer d.Close()
	const blocks = 64
	out, _ := d.Alloc(4 * blocks)
	if err := d.Launch("demo/demo_static_shared_first_read", cuda.D1(blocks), cuda.D1(32), 0, out); err != nil {
		t.Fatal(err)
	}
	for b, v := range download[int32](t, d, out, blocks) {
		if v != -1 {
			t.Fatalf("block %d found %#x in static shared memory before writing it, want the 0xFFFFFFFF fill", b, uint32(v))
		}
	}
}

// TestAttentionBackwardOptsIn: a GQA group of 16 with headDim 256 needs
// 66,112 bytes of shared memory in attention_backward_f32; the backend
// opts the kernel in (the emulator refuses it otherwise) and the result
// matches the CPU backend.
func TestAttentionBackwardOptsIn(t *testing.T) {
	const nTok, nHead, nKV, headDim, maxLen = 3, 16, 1, 256, 3
	scale := float32(1 / math.Sqrt(headDim))
	rng := rand.New(rand.NewPCG(3, 4))
	vals := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	q, kc, vc, dout := vals(nTok*nHead*headDim), vals(maxLen*nKV*headDim), vals(maxLen*nKV*headDim), vals(nTok*nHead*headDim)
	run := func(b kernels.Backend) (dq, dk, dv []float32) {
		up := func(v []float32) kernels.Buffer { x := b.Alloc(kernels.F32, len(v)); b.Upload(x, v); return x }
		ints := func(v []int32) kernels.Buffer { x := b.Alloc(kernels.I32, len(v)); b.UploadI32(x, v); return x }
		qb, kb, vb, db := up(q), up(kc), up(vc), up(dout)
		slot, pos := ints([]int32{0, 0, 0}), ints([]int32{0, 1, 2})
		pages := kernels.KVPages{Table: ints([]int32{0}), BlockSize: maxLen, MaxBlocks: 1}
		out, lse := b.Alloc(kernels.F32, len(q)), b.Alloc(kernels.F32, nTok*nHead)
		b.Attention(out, lse, qb, kb, vb, slot, pos, pages, nTok, nHead, nKV, headDim, scale, kernels.AttentionVariant{})
		gq, gk, gv := b.Alloc(kernels.F32, len(q)), b.Alloc(kernels.F32, len(kc)), b.Alloc(kernels.F32, len(kc))
		b.(kernels.TrainOps).AttentionBackward(gq, gk, gv, db, out, lse, qb, kb, vb, slot, pos, pages, nTok, nHead, nKV, headDim, scale, kernels.AttentionVariant{})
		dq, dk, dv = make([]float32, len(q)), make([]float32, len(kc)), make([]float32, len(kc))
		b.Download(dq, gq)
		b.Download(dk, gk)
		b.Download(dv, gv)
		if err := b.Sync(); err != nil {
			t.Fatalf("%s: %v", b.Name(), err)
		}
		return dq, dk, dv
	}
	e := New()
	defer e.Close()
	c := cpu.New()
	gq, gk, gv := run(e)
	wq, wk, wv := run(c)
	wide := func(v []float32) []float64 {
		w := make([]float64, len(v))
		for i, x := range v {
			w[i] = float64(x)
		}
		return w
	}
	for _, r := range []struct {
		name      string
		got, want []float32
	}{{"dq", gq, wq}, {"dk", gk, wk}, {"dv", gv, wv}} {
		if n := kerneltest.NMSE(r.got, wide(r.want)); !(n < 1e-10) {
			t.Errorf("%s: NMSE %.3g against the CPU backend", r.name, n)
		}
	}
}
