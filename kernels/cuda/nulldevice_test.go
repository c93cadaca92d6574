package cuda

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels"
)

// TestNullDeviceCountsWithoutWork: a backend over the null device hands
// out distinct buffers, downloads zeros whatever was uploaded, counts
// what it is asked (GEMM weight bytes included), and captures and
// replays a graph whose kernels count once per replay; a capture that
// syncs is refused, as on a GPU.
func TestNullDeviceCountsWithoutWork(t *testing.T) {
	be := New(NewNullDevice())
	defer be.Close()
	const m, n, k = 4, 6, 8
	a, w, c := be.Alloc(kernels.F32, m*k), be.Alloc(kernels.BF16, n*k), be.Alloc(kernels.F32, m*n)
	pa, pw, pc := be.buf("t", "a", a, 0, kernels.F32).ptr, be.buf("t", "w", w, 0, kernels.BF16).ptr, be.buf("t", "c", c, 0, kernels.F32).ptr
	if pa == pw || pw == pc || pa == pc || pa == 0 {
		t.Fatalf("buffers at %#x, %#x, %#x: want distinct non-zero addresses", pa, pw, pc)
	}
	ones := make([]float32, m*k)
	for i := range ones {
		ones[i] = 1
	}
	be.Upload(a, ones)
	got := make([]float32, m*k)
	for i := range got {
		got[i] = 7
	}
	be.Download(got, a)
	for i, v := range got {
		if v != 0 {
			t.Fatalf("download [%d] = %v, want 0: the null device holds nothing", i, v)
		}
	}
	be.TagWeights(w)
	g, ok := any(be).(kernels.Graphs)
	if !ok {
		t.Fatal("the backend over the null device has no graphs")
	}
	step := func() {
		be.MatMul(c, a, w, m, n, k, false, true, 1, 0)
		be.Add(c, c, c, m*n)
	}
	step() // warm-up: the GEMM's bf16 scratch comes from the pool, as on a GPU
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
	before := be.Counts()
	if err := g.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	step()
	gr, err := g.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	g.Replay(gr)
	g.Replay(gr)
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
	d := be.Counts().Sub(before)
	// Two replays of three nodes (A's cast to bf16, the GEMM reading n·k
	// bf16 weights, the Add).
	if d.GraphLaunches != 2 || d.GraphKernels != 6 || d.WeightBytes != 2*n*k*2 || d.Allocs != 0 || d.Launches != 0 {
		t.Errorf("capture and two replays: %v; want 2 graph launches of 3 nodes and %d weight bytes", d, 2*n*k*2)
	}
	g.FreeGraph(gr)
	if err := g.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	be.Download(got, a)
	if _, err := g.EndCapture(); err == nil {
		t.Error("a capture that downloaded (a host sync) ended without error")
	}
}
