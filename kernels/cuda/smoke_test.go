//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/kernels"
)

// TestSmokeOnGPU is the GPU check's first step, seconds long, so that a
// machine that cannot run grpo says why before anything longer starts:
// the driver and the device (multiprocessors, the shared memory a kernel
// may opt into), how each kernel module loaded (its cubin, or the PTX
// through the driver's JIT, and how long that took), one
// matrix product against a plain loop, and one graph captured and
// replayed twice.
func TestSmokeOnGPU(t *testing.T) {
	t0 := time.Now()
	d, err := openDriver(0)
	if err != nil {
		t.Fatal(err)
	}
	opened := time.Since(t0)
	b := New(d)
	defer func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	}()
	f, err := d.facts()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("smoke: driver CUDA %d.%d, %s, %d SMs, %d KiB shared memory per block by opt-in, opened in %v (cuBLAS %s)",
		f.Driver/1000, f.Driver%1000/10, d.arch, f.SMs, f.SharedOptIn>>10, opened.Round(time.Millisecond), CublasPath())
	var loads []string
	var total time.Duration
	cubins := 0
	for _, l := range d.loadTimes {
		total += l.took
		how := "cubin"
		if l.cubin {
			cubins++
		} else {
			how = fmt.Sprintf("JIT %v", l.jit.Round(time.Millisecond))
			if l.cubinErr != "" {
				how += " (cubin refused: " + l.cubinErr + ")"
			}
		}
		loads = append(loads, fmt.Sprintf("%s %v %s", strings.TrimSuffix(strings.TrimPrefix(l.file, "ptx/"), ".ptx"), l.took.Round(time.Millisecond), how))
	}
	t.Logf("smoke: %d kernel modules loaded in %v, %d from cubins: %s", len(d.loadTimes), total.Round(time.Millisecond), cubins, strings.Join(loads, ", "))
	if f.SharedOptIn < 96<<10 {
		t.Errorf("the device lets a kernel opt into %d KiB of shared memory; the attention kernels need 96 KiB or more (sm_80+)", f.SharedOptIn>>10)
	}

	// One product, m×k times k×n, against float64 loops.
	const m, n, k = 64, 48, 80
	rng := rand.New(rand.NewPCG(1, 2))
	ha, hb := make([]float32, m*k), make([]float32, k*n)
	for i := range ha {
		ha[i] = rng.Float32() - 0.5
	}
	for i := range hb {
		hb[i] = rng.Float32() - 0.5
	}
	a, bb, c := b.Alloc(kernels.F32, m*k), b.Alloc(kernels.F32, k*n), b.Alloc(kernels.F32, m*n)
	b.Upload(a, ha)
	b.Upload(bb, hb)
	g0 := time.Now()
	b.MatMul(c, a, bb, m, n, k, false, false, 1, 0)
	got := make([]float32, m*n)
	b.Download(got, c)
	if err := b.Sync(); err != nil {
		t.Fatalf("matmul: %v", err)
	}
	worst := 0.0
	for i := range m {
		for j := range n {
			want := 0.0
			for p := range k {
				want += float64(ha[i*k+p]) * float64(hb[p*n+j])
			}
			worst = max(worst, math.Abs(float64(got[i*n+j])-want))
		}
	}
	t.Logf("smoke: matmul %d×%d×%d in %v, max |error| %.2g", m, n, k, time.Since(g0).Round(time.Microsecond), worst)
	if worst > 1e-4 { // f32 on CUDA cores or TF32-free cuBLAS: far below this
		t.Errorf("matmul max |error| %g against float64 loops", worst)
	}

	// One graph: Scale(x, 2) captured (not run), then replayed twice.
	x := b.Alloc(kernels.F32, 256)
	ones := make([]float32, 256)
	for i := range ones {
		ones[i] = 1
	}
	b.Upload(x, ones)
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := b.BeginCapture(); err != nil {
		t.Fatalf("capture: %v", err)
	}
	b.Scale(x, 2, 256)
	g, err := b.EndCapture()
	if err != nil {
		t.Fatalf("capture: %v", err)
	}
	b.Replay(g)
	b.Replay(g)
	b.Download(ones, x)
	if err := b.Sync(); err != nil {
		t.Fatalf("replay: %v", err)
	}
	b.FreeGraph(g)
	if ones[0] != 4 || ones[255] != 4 {
		t.Errorf("after capturing x·2 and replaying it twice x = %v, want 4 (the capture must not run the work)", ones[0])
	}
	t.Logf("smoke: graph captured and replayed twice; done in %v", time.Since(t0).Round(time.Millisecond))
}
