package cuda

import (
	"fmt"
	"slices"
	"unsafe"
)

// Counts is what a backend asked of its device since the device was
// wrapped (New wraps every device in a Counter). A figure per decode step
// or micro-batch is the difference of two snapshots (Sub).
type Counts struct {
	// Launches and GEMMs the host issued one by one (Sgemm, GemmBF16 and
	// GemmBF16C are cuBLAS calls, counted apart from kernels).
	Launches int64 `json:"launches"`
	GEMMs    int64 `json:"gemms"`
	// GraphLaunches are LaunchGraph calls; GraphKernels the kernels and
	// GEMMs those replays ran (a graph's content, counted at capture).
	GraphLaunches int64 `json:"graph_launches"`
	GraphKernels  int64 `json:"graph_kernels"`
	// Captures are the graphs captured (EndCapture calls that made one).
	Captures int64 `json:"captures"`
	// Allocs and Frees are cuMemAlloc and cuMemFree (the backend's pool
	// recycles its own memory without either); Memsets zero recycled
	// memory on the stream.
	Allocs  int64 `json:"allocs"`
	Frees   int64 `json:"frees"`
	Memsets int64 `json:"memsets"`
	// HostAllocs are page-locked allocations (cuMemHostAlloc/FreeHost).
	HostAllocs int64 `json:"host_allocs"`
	// Syncs are the host's waits for the device: Sync and WaitEvent.
	Syncs int64 `json:"syncs"`
	// HtoD and DtoH count copies between host and device, and their bytes.
	HtoD      int64 `json:"htod_copies"`
	HtoDBytes int64 `json:"htod_bytes"`
	DtoH      int64 `json:"dtoh_copies"`
	DtoHBytes int64 `json:"dtoh_bytes"`
	// WeightBytes are the bytes GEMMs read from memory tagged as weights
	// (Backend.TagWeights): each GEMM's operand extent from its shape,
	// replayed GEMMs included. It is what a decode step must stream from
	// HBM at least once; KV bytes depend on the sequences' lengths, which
	// only the caller knows (grpo bench adds them from the shapes).
	WeightBytes int64 `json:"weight_bytes"`
	// Atomics are the atomic operations kernels made, where the device
	// can count them (emu: AtomicsTotal); a GPU cannot, and reports 0.
	Atomics int64 `json:"atomics,omitempty"`
	// FLOPs are the floating-point operations of the matrix work the
	// device executed, replayed graphs included: 2·m·n·k per GEMM, counted
	// here from its shape, and what each op whose own kernel multiplies
	// matrices (attention, LoRA shrink/expand, grouped GEMMs) reports
	// through CountFLOPs, its formula beside its launch. Work done twice
	// (recompute, attention backward's rebuilt scores) counts twice: this
	// is the numerator of hardware FLOP utilisation. Elementwise, norm,
	// softmax, RoPE and sampling kernels are not counted: a few FLOPs an
	// element, bandwidth- not compute-bound.
	FLOPs int64 `json:"flops"`
}

// Sub is c − old, field by field: the work between two snapshots.
func (c Counts) Sub(old Counts) Counts {
	return Counts{
		Launches: c.Launches - old.Launches, GEMMs: c.GEMMs - old.GEMMs,
		GraphLaunches: c.GraphLaunches - old.GraphLaunches, GraphKernels: c.GraphKernels - old.GraphKernels, Captures: c.Captures - old.Captures,
		Allocs: c.Allocs - old.Allocs, Frees: c.Frees - old.Frees, Memsets: c.Memsets - old.Memsets,
		HostAllocs: c.HostAllocs - old.HostAllocs, Syncs: c.Syncs - old.Syncs,
		HtoD: c.HtoD - old.HtoD, HtoDBytes: c.HtoDBytes - old.HtoDBytes,
		DtoH: c.DtoH - old.DtoH, DtoHBytes: c.DtoHBytes - old.DtoHBytes,
		WeightBytes: c.WeightBytes - old.WeightBytes, Atomics: c.Atomics - old.Atomics,
		FLOPs: c.FLOPs - old.FLOPs,
	}
}

// String is a one-line summary for test failures and logs.
func (c Counts) String() string {
	return fmt.Sprintf("%d launches, %d GEMMs, %d graph launches (%d kernels), %d allocs, %d frees, %d memsets, %d syncs, %d HtoD (%d B), %d DtoH (%d B), %d weight bytes, %d atomics, %d FLOPs",
		c.Launches, c.GEMMs, c.GraphLaunches, c.GraphKernels, c.Allocs, c.Frees, c.Memsets, c.Syncs, c.HtoD, c.HtoDBytes, c.DtoH, c.DtoHBytes, c.WeightBytes, c.Atomics, c.FLOPs)
}

// Counter is a Device that counts what is asked of the device it wraps
// and passes every call through. The same code counts under emu (in
// tests) and on a GPU (grpo bench). Like the backend, it is driven by one
// goroutine at a time.
type Counter struct {
	Device
	c Counts
	// weights are the tagged weight ranges, sorted by start.
	weights []span
	// capturing holds the content of the graph being captured.
	capturing bool
	capture   graphCounts
	graphs    map[Graph]graphCounts
	// prof is the open kernel profile (profile.go), nil when none.
	prof *profiler
	// launched counts launches by kernel name (Launched).
	launched map[string]int64
}

type span struct{ lo, hi DevicePtr }

// graphCounts is what one replay of a graph runs.
type graphCounts struct{ kernels, weightBytes, flops int64 }

// NewCounter wraps d.
func NewCounter(d Device) *Counter {
	return &Counter{Device: d, graphs: map[Graph]graphCounts{}, launched: map[string]int64{}}
}

// Launched is how many times kernel name was launched (or captured into a
// graph) since the device was wrapped: which kernels an op chose, for
// tests that hold a path to its kernels.
func (c *Counter) Launched(name string) int64 { return c.launched[name] }

// atomicsCounter is a device that counts its kernels' atomic operations
// (the emulator).
type atomicsCounter interface{ AtomicsTotal() uint64 }

// Counts returns the totals so far.
func (c *Counter) Counts() Counts {
	out := c.c
	if a, ok := c.Device.(atomicsCounter); ok {
		out.Atomics = int64(a.AtomicsTotal())
	}
	return out
}

// Inner is the wrapped device.
func (c *Counter) Inner() Device { return c.Device }

// tagWeights marks [p, p+bytes) as weights; untag removes the range
// starting at p (its memory went back to the pool).
func (c *Counter) tagWeights(p DevicePtr, bytes int) {
	i, _ := slices.BinarySearchFunc(c.weights, p, func(s span, p DevicePtr) int { return cmpPtr(s.lo, p) })
	if i < len(c.weights) && c.weights[i].lo == p {
		c.weights[i].hi = p + DevicePtr(bytes)
		return
	}
	c.weights = slices.Insert(c.weights, i, span{p, p + DevicePtr(bytes)})
}

func (c *Counter) untag(p DevicePtr) {
	i, ok := slices.BinarySearchFunc(c.weights, p, func(s span, p DevicePtr) int { return cmpPtr(s.lo, p) })
	if ok {
		c.weights = slices.Delete(c.weights, i, i+1)
	}
}

func cmpPtr(a, b DevicePtr) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// isWeight reports whether p lies in a tagged range.
func (c *Counter) isWeight(p DevicePtr) bool {
	i, ok := slices.BinarySearchFunc(c.weights, p, func(s span, p DevicePtr) int { return cmpPtr(s.lo, p) })
	if ok {
		return true
	}
	return i > 0 && p < c.weights[i-1].hi
}

// gemmWeightBytes is the bytes a column-major GEMM reads from tagged
// operands: op(A) is m×k and op(B) k×n, elem bytes per element.
func (c *Counter) gemmWeightBytes(elem, m, n, k int, a, b DevicePtr) int64 {
	var w int64
	if c.isWeight(a) {
		w += int64(m) * int64(k) * int64(elem)
	}
	if c.isWeight(b) {
		w += int64(k) * int64(n) * int64(elem)
	}
	return w
}

// issued counts one kernel or GEMM, into the capture when one is open.
func (c *Counter) issued(gemm bool, weightBytes, flops int64) {
	if c.capturing {
		c.capture.kernels++
		c.capture.weightBytes += weightBytes
		c.capture.flops += flops
		return
	}
	if gemm {
		c.c.GEMMs++
	} else {
		c.c.Launches++
	}
	c.c.WeightBytes += weightBytes
	c.c.FLOPs += flops
}

// CountFLOPs adds the matrix FLOPs of an op's own kernels (Counts.FLOPs),
// into the capture when one is open. Ops call it once per op, beside the
// launch, with the formula of what the kernels compute.
func (c *Counter) CountFLOPs(n int64) {
	if c.capturing {
		c.capture.flops += n
		return
	}
	c.c.FLOPs += n
}

// gemmFLOPs is a GEMM's multiply-adds, 2·m·n·k.
func gemmFLOPs(m, n, k int) int64 { return 2 * int64(m) * int64(n) * int64(k) }

func (c *Counter) Alloc(bytes int) (DevicePtr, error) {
	c.c.Allocs++
	return c.Device.Alloc(bytes)
}

func (c *Counter) Free(p DevicePtr) error {
	c.c.Frees++
	c.untag(p)
	return c.Device.Free(p)
}

func (c *Counter) Memset(p DevicePtr, bytes int) error {
	if !c.capturing {
		c.c.Memsets++
	}
	if c.prof != nil {
		return c.prof.time(c.capturing, "memset", func() error { return c.Device.Memset(p, bytes) })
	}
	return c.Device.Memset(p, bytes)
}

// CopyDtoD is not counted; an open profile times it.
func (c *Counter) CopyDtoD(dst, src DevicePtr, bytes int) error {
	if c.prof != nil {
		return c.prof.time(c.capturing, "copy DtoD", func() error { return c.Device.CopyDtoD(dst, src, bytes) })
	}
	return c.Device.CopyDtoD(dst, src, bytes)
}

func (c *Counter) HostAlloc(bytes int) (unsafe.Pointer, error) {
	c.c.HostAllocs++
	return c.Device.HostAlloc(bytes)
}

func (c *Counter) CopyHtoDAsync(dst DevicePtr, src unsafe.Pointer, bytes int) error {
	c.c.HtoD++
	c.c.HtoDBytes += int64(bytes)
	if c.prof != nil {
		return c.prof.time(c.capturing, "copy HtoD", func() error { return c.Device.CopyHtoDAsync(dst, src, bytes) })
	}
	return c.Device.CopyHtoDAsync(dst, src, bytes)
}

func (c *Counter) CopyDtoHAsync(dst unsafe.Pointer, src DevicePtr, bytes int) error {
	c.c.DtoH++
	c.c.DtoHBytes += int64(bytes)
	if c.prof != nil {
		return c.prof.time(c.capturing, "copy DtoH", func() error { return c.Device.CopyDtoHAsync(dst, src, bytes) })
	}
	return c.Device.CopyDtoHAsync(dst, src, bytes)
}

func (c *Counter) Launch(name string, grid, block Dim3, sharedBytes int, args ...any) error {
	c.issued(false, 0, 0)
	c.launched[name]++
	if c.prof != nil {
		return c.prof.time(c.capturing, name, func() error { return c.Device.Launch(name, grid, block, sharedBytes, args...) })
	}
	return c.Device.Launch(name, grid, block, sharedBytes, args...)
}

func (c *Counter) Sgemm(transA, transB bool, m, n, k int, alpha float32, a DevicePtr, lda int, b DevicePtr, ldb int, beta float32, cp DevicePtr, ldc int) error {
	return c.gemm("sgemm", 4, transA, transB, m, n, k, a, b, func() error {
		return c.Device.Sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, cp, ldc)
	})
}

func (c *Counter) GemmBF16(transA, transB bool, m, n, k int, alpha float32, a DevicePtr, lda int, b DevicePtr, ldb int, beta float32, cp DevicePtr, ldc int) error {
	return c.gemm("gemm bf16", 2, transA, transB, m, n, k, a, b, func() error {
		return c.Device.GemmBF16(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, cp, ldc)
	})
}

func (c *Counter) GemmBF16C(transA, transB bool, m, n, k int, alpha float32, a DevicePtr, lda int, b DevicePtr, ldb int, beta float32, cp DevicePtr, ldc int) error {
	return c.gemm("gemm bf16 to bf16", 2, transA, transB, m, n, k, a, b, func() error {
		return c.Device.GemmBF16C(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, cp, ldc)
	})
}

// gemm counts one GEMM of elements of size bytes (its weight bytes and
// FLOPs) and runs it, timed under the profile's name when one is open.
func (c *Counter) gemm(name string, size int, transA, transB bool, m, n, k int, a, b DevicePtr, run func() error) error {
	c.issued(true, c.gemmWeightBytes(size, m, n, k, a, b), gemmFLOPs(m, n, k))
	if c.prof != nil {
		return c.prof.time(c.capturing, gemmName(name, transA, transB, m, n, k), run)
	}
	return run()
}

func (c *Counter) WaitEvent(e Event) error {
	c.c.Syncs++
	return c.Device.WaitEvent(e)
}

func (c *Counter) Sync() error {
	c.c.Syncs++
	return c.Device.Sync()
}

func (c *Counter) BeginCapture() error {
	if err := c.Device.BeginCapture(); err != nil {
		return err
	}
	c.capturing, c.capture = true, graphCounts{}
	return nil
}

func (c *Counter) EndCapture() (Graph, error) {
	c.capturing = false
	g, err := c.Device.EndCapture()
	if err == nil {
		c.graphs[g] = c.capture
		c.c.Captures++
	}
	return g, err
}

func (c *Counter) LaunchGraph(g Graph) error {
	gc := c.graphs[g]
	c.c.GraphLaunches++
	c.c.GraphKernels += gc.kernels
	c.c.WeightBytes += gc.weightBytes
	c.c.FLOPs += gc.flops
	if c.prof != nil {
		return c.prof.time(c.capturing, fmt.Sprintf("graph (%d kernels)", gc.kernels), func() error { return c.Device.LaunchGraph(g) })
	}
	return c.Device.LaunchGraph(g)
}

func (c *Counter) DestroyGraph(g Graph) error {
	delete(c.graphs, g)
	return c.Device.DestroyGraph(g)
}

// MemInfo passes the wrapped device's report through (memInfoDevice).
func (c *Counter) MemInfo() (free, total int64, err error) {
	d, ok := c.Device.(memInfoDevice)
	if !ok {
		return 0, 0, fmt.Errorf("%s: the device cannot report its free memory", c.Name())
	}
	return d.MemInfo()
}
