// Package emu owns the CUDA emulator: it compiles the kernel sources of
// kernels/cuda (*.cu) with the host C++ compiler behind shim.h and runs
// them on the CPU, each block's threads as cooperative fibers (runtime.cc),
// with host memory standing in for device memory. Device implements
// cuda.Device over it, so the Go CUDA backend — launch configurations,
// buffer handling, op sequencing — runs unchanged; it registers as the
// kernels backend "emu" and is what `go test ./...` checks against the CPU
// reference. cuBLAS is not emulated: Sgemm and GemmBF16(C) are plain host
// loops that keep cuBLAS's contract (operand types, f32 accumulation), not
// its summation order. The stream is: async copies are queued and run only
// when an event or a later operation needs them (stream.go), so the
// backend's staging and event logic meets the hazards it would on a GPU.
package emu

/*
#cgo CXXFLAGS: -std=c++17 -O2 -fno-strict-aliasing -Wall -Wno-unused-function
#cgo LDFLAGS: -lstdc++ -lm
#include <stdlib.h>
#include <string.h>
#include "runtime.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
)

func init() {
	C.emu_register_all()
	if v := os.Getenv("GRPO_EMU_MATH_ULPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 1000 {
			panic(fmt.Sprintf("emu: GRPO_EMU_MATH_ULPS=%q: want an integer 0..1000", v))
		}
		SetMathULPs(n)
	}
	switch v := os.Getenv("GRPO_EMU_BLOCK_ORDER"); v {
	case "", "forward":
	case "reverse":
		SetBlockOrder(Reverse)
	default:
		panic(fmt.Sprintf("emu: GRPO_EMU_BLOCK_ORDER=%q: want forward or reverse", v))
	}
	kernels.Register("emu", func() (kernels.Backend, error) { return New(), nil })
	// emu:N is another emulated device of its own (its memory, stream
	// and graphs), so a data-parallel run opens several in one process.
	kernels.RegisterIndexed("emu", func(int) (kernels.Backend, error) { return New(), nil })
}

// New returns the CUDA backend running on a fresh emulated device.
func New() *cuda.Backend { return newBackend(NewDevice()) }

func newBackend(d *Device) *cuda.Backend { return cuda.New(d) }

// Device is an emulated CUDA device: allocations are C heap memory, copies
// are memcpy, kernels run on the fiber runtime across up to GOMAXPROCS OS
// threads. It is safe for use by one goroutine at a time.
type Device struct {
	mu     sync.Mutex
	allocs map[cuda.DevicePtr]int
	// rename maps a kernel name to another registered kernel; tests use it
	// to swap in planted variants.
	rename map[string]string
	// optIn is SetMaxDynamicShared's record; figures overrides the
	// committed ptxas figures of a kernel (tests).
	optIn   map[string]int
	figures map[string]cuda.KernelFigures
	stream  stream
	// capturing is the open stream capture (graph.go), graphs the
	// captured ones by handle.
	capturing *capture
	graphs    map[cuda.Graph][]func() error
	lastGraph cuda.Graph
	// atomics counts the atomic operations each kernel has made.
	atomics map[string]uint64
	// reads counts the bytes each kernel counted as read (GRPO_COUNT_READ).
	reads map[string]uint64
}

var _ cuda.Device = (*Device)(nil)

// NewDevice returns an empty emulated device.
func NewDevice() *Device {
	return &Device{allocs: map[cuda.DevicePtr]int{}, rename: map[string]string{},
		optIn: map[string]int{}, figures: map[string]cuda.KernelFigures{}, graphs: map[cuda.Graph][]func() error{},
		atomics: map[string]uint64{}, reads: map[string]uint64{},
		stream: stream{host: map[uintptr]int{}, events: map[cuda.Event]uint64{}, times: map[cuda.Event]time.Time{}}}
}

// SetFigures makes launches of kernel name check against f instead of the
// committed ptxas figures (for tests of the launch limits).
func (d *Device) SetFigures(name string, f cuda.KernelFigures) { d.figures[name] = f }

// SetMaxDynamicShared records the opt-in the GPU needs before a launch with
// more than 48 KiB of shared memory; bytes beyond sm_90's opt-in maximum
// fail as cuFuncSetAttribute does.
func (d *Device) SetMaxDynamicShared(name string, bytes int) error {
	f, _ := d.figuresOf(name)
	if bytes < 0 || f.StaticShared+bytes > cuda.MaxSharedPerBlockOptIn {
		return fmt.Errorf("emu: SetMaxDynamicShared(%s, %d): above the %d bytes of shared memory a block may have on sm_90 (CUDA_ERROR_INVALID_VALUE)", name, bytes, cuda.MaxSharedPerBlockOptIn)
	}
	d.optIn[name] = bytes
	return nil
}

// figuresOf returns the figures a launch of name is checked against: a
// test's override, else ptxas's for the kernel (a planted variant, "planted/x",
// has x's), else only the hardware limits.
func (d *Device) figuresOf(name string) (cuda.KernelFigures, bool) {
	if f, ok := d.figures[name]; ok {
		return f, true
	}
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return cuda.Figures(name)
}

// GPUMathULPs is how far the GPU's expf, logf and rsqrtf may be from the
// true value (CUDA C Programming Guide, "Mathematical Functions": 2 ulp
// each, full-precision versions), where glibc's are within 1: the suites
// must pass with SetMathULPs(GPUMathULPs).
const GPUMathULPs = 2

// mathULPs is the current perturbation of expf/logf/rsqrtf (SetMathULPs).
var mathULPs int

// SetMathULPs makes expf, logf and rsqrtf in every kernel return results n
// ulp away from libm's, up or down by a hash of the argument (0: libm), and
// returns the previous setting. The GPU's versions are within 2 ulp of the
// true value where glibc's are within 1, so the conformance and full-model
// suites must pass at n = GPUMathULPs (TestPerturbedMath here,
// TestFullModelPerturbedMath in internal/modeltest; both -tags slow). GRPO_EMU_MATH_ULPS=n in the
// environment sets it for a whole process. Call it only while no kernel
// runs.
func SetMathULPs(n int) int {
	old := mathULPs
	mathULPs = n
	C.emu_set_math_ulps(C.int(n))
	return old
}

// BlockOrder is the order in which launches hand out their blocks to the
// worker threads (which run them in parallel).
type BlockOrder int

const (
	// Forward takes blocks in linear order, block (0,0,0) first.
	Forward BlockOrder = iota
	// Reverse takes the last block first: a kernel whose result depends
	// on the order its blocks run in (a race between blocks, atomics
	// summed in arrival order) gives different bits under the two orders.
	Reverse
)

var blockOrder BlockOrder

// SetBlockOrder sets the block order of every launch and returns the
// previous one. GRPO_EMU_BLOCK_ORDER=reverse in the environment sets it for
// a whole process. Call it only while no kernel runs.
func SetBlockOrder(o BlockOrder) BlockOrder {
	old := blockOrder
	blockOrder = o
	C.emu_set_block_order(C.int(o))
	return old
}

// Atomics is the number of atomic operations (atomicAdd, atomicMax,
// atomicCAS, …) kernel name has made on this device since it was created,
// summed over its launches; a launch under a Substitute counts under the
// name launched.
func (d *Device) Atomics(name string) uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.atomics[name]
}

// ReadBytes is the bytes of device memory kernel name has counted as read
// (GRPO_COUNT_READ in kernels/cuda/common.cuh) on this device, summed over
// its launches: only the reads its source marks, typically its main
// operand, so a test can bound the passes it makes over that operand.
func (d *Device) ReadBytes(name string) uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.reads[name]
}

// AtomicsTotal is Atomics summed over every kernel.
func (d *Device) AtomicsTotal() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var n uint64
	for _, c := range d.atomics {
		n += c
	}
	return n
}

// Substitute makes launches of kernel name run kernel with instead (for
// tests: "attention_f32" → "planted/attention_f32").
func (d *Device) Substitute(name, with string) { d.rename[name] = with }

func (d *Device) Name() string { return "emu" }

// GPU is false: the emulated device is the host.
func (d *Device) GPU() bool { return false }

// allocAlign is the alignment of Alloc's memory.
const allocAlign = 256

func (d *Device) Alloc(bytes int) (cuda.DevicePtr, error) {
	if err := d.refuse("Alloc"); err != nil {
		return 0, err
	}
	if bytes <= 0 {
		return 0, fmt.Errorf("emu: Alloc(%d)", bytes)
	}
	// cuMemAlloc's memory is aligned for any access (256 bytes in
	// practice); wmma's loads need 32. posix_memalign takes the exact
	// size (aligned_alloc would want it rounded up to the alignment), so
	// AddressSanitizer flags a read one element past the buffer, as
	// .ci/asan.sh requires.
	var p unsafe.Pointer
	if C.posix_memalign(&p, allocAlign, C.size_t(bytes)) != 0 || p == nil {
		return 0, fmt.Errorf("emu: out of host memory allocating %d bytes", bytes)
	}
	C.memset(p, 0, C.size_t(bytes))
	ptr := cuda.DevicePtr(uintptr(p))
	d.mu.Lock()
	d.allocs[ptr] = bytes
	d.mu.Unlock()
	return ptr, nil
}

func (d *Device) Free(p cuda.DevicePtr) error {
	if err := d.refuse("Free"); err != nil {
		return err
	}
	// Queued copies into p run first, as cuMemFree after a stream sync.
	d.flush()
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.allocs[p]; !ok {
		return fmt.Errorf("emu: Free(%#x): not an allocation of this device", uintptr(p))
	}
	delete(d.allocs, p)
	C.free(ptrOf(p))
	return nil
}

// ptrOf turns a device address back into the C pointer it came from
// (calloc'd memory, which Go's collector never moves or frees).
func ptrOf(p cuda.DevicePtr) unsafe.Pointer { return unsafe.Add(nil, uintptr(p)) }

// check verifies [p, p+bytes) lies inside one allocation, so a bad copy is
// an error rather than a corrupted heap.
func (d *Device) check(what string, p cuda.DevicePtr, bytes int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for base, n := range d.allocs {
		if p >= base && p+cuda.DevicePtr(bytes) <= base+cuda.DevicePtr(n) {
			return nil
		}
	}
	return fmt.Errorf("emu: %s of %d bytes at %#x is outside every allocation", what, bytes, uintptr(p))
}

func (d *Device) CopyDtoD(dst, src cuda.DevicePtr, bytes int) error {
	if err := errors.Join(d.check("CopyDtoD", dst, bytes), d.check("CopyDtoD", src, bytes)); err != nil {
		return err
	}
	run := func() error {
		d.flush()
		C.memmove(ptrOf(dst), ptrOf(src), C.size_t(bytes))
		return nil
	}
	if d.record(run) {
		return nil
	}
	return run()
}

// Memset zeroes device memory in stream order.
func (d *Device) Memset(p cuda.DevicePtr, bytes int) error {
	if err := d.check("Memset", p, bytes); err != nil {
		return err
	}
	run := func() error {
		d.flush()
		C.memset(ptrOf(p), 0, C.size_t(bytes))
		return nil
	}
	if d.record(run) {
		return nil
	}
	return run()
}

const errLen = 512

// Launch marshals args like cuLaunchKernel's kernelParams (one pointer per
// parameter, to its value) and runs the grid: blocks are shared out among
// up to GOMAXPROCS goroutines, each calling into the runtime on its own OS
// thread.
func (d *Device) Launch(name string, grid, block cuda.Dim3, sharedBytes int, args ...any) error {
	args = append([]any(nil), args...)
	run := func() error { return d.launch(name, grid, block, sharedBytes, args...) }
	if d.record(run) {
		return nil
	}
	return run()
}

func (d *Device) launch(name string, grid, block cuda.Dim3, sharedBytes int, args ...any) error {
	d.flush() // the kernel runs after every copy queued before it
	launched := name
	if with, ok := d.rename[name]; ok {
		name = with
	}
	// The GPU's per-kernel limits: __launch_bounds__, registers × threads,
	// shared memory without the opt-in (the runtime checks the rest). The
	// opt-in is the launched name's: a substitute stands in for it.
	if f, ok := d.figuresOf(name); ok {
		threads := int(block.X) * int(block.Y) * int(block.Z)
		if err := f.CheckLaunch(name, threads, sharedBytes, d.optIn[launched]); err != nil {
			return fmt.Errorf("emu: launching %w", err)
		}
	} else if sharedBytes > cuda.DefaultSharedPerBlock && d.optIn[launched] < sharedBytes {
		return fmt.Errorf("emu: launching %s: %d bytes of dynamic shared memory exceed the %d bytes a block gets without opting in (SetMaxDynamicShared)", name, sharedBytes, cuda.DefaultSharedPerBlock)
	}
	n := len(args)
	// One C block for argument values, pointers and sizes: cgo forbids
	// passing Go memory that holds pointers.
	vals := (*[1 << 20]byte)(C.calloc(C.size_t(8*n+1), 1))
	ptrs := (*[1 << 16]unsafe.Pointer)(C.calloc(C.size_t(n+1), C.size_t(unsafe.Sizeof(unsafe.Pointer(nil)))))
	sizes := (*[1 << 16]C.size_t)(C.calloc(C.size_t(n+1), C.size_t(unsafe.Sizeof(C.size_t(0)))))
	defer C.free(unsafe.Pointer(vals))
	defer C.free(unsafe.Pointer(ptrs))
	defer C.free(unsafe.Pointer(sizes))
	for i, a := range args {
		b, err := cuda.ArgBytes(a)
		if err != nil {
			return fmt.Errorf("emu: launching %s: argument %d: %w", name, i, err)
		}
		copy(vals[8*i:], b)
		ptrs[i] = unsafe.Pointer(&vals[8*i])
		sizes[i] = C.size_t(len(b))
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var cerr [errLen]C.char
	L := C.emu_launch_prepare(cname, C.uint(grid.X), C.uint(grid.Y), C.uint(grid.Z), C.uint(block.X), C.uint(block.Y), C.uint(block.Z),
		C.size_t(sharedBytes), &ptrs[0], &sizes[0], C.int(n), &cerr[0], errLen)
	if L == nil {
		return fmt.Errorf("emu: launching %s: %s", name, C.GoString(&cerr[0]))
	}
	blocks := int(grid.X) * int(grid.Y) * int(grid.Z)
	workers := min(blocks, runtime.GOMAXPROCS(0))
	if workers <= 1 {
		C.emu_launch_run(L)
	} else {
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() { C.emu_launch_run(L) })
		}
		wg.Wait()
	}
	atomics, reads := uint64(C.emu_launch_atomics(L)), uint64(C.emu_launch_reads(L))
	d.mu.Lock()
	d.atomics[launched] += atomics
	d.reads[launched] += reads
	d.mu.Unlock()
	if C.emu_launch_finish(L, &cerr[0], errLen) != 0 {
		return fmt.Errorf("emu: kernel %s: %s", name, C.GoString(&cerr[0]))
	}
	return nil
}

// Sync runs the queued copies; everything else completed when it was
// issued.
func (d *Device) Sync() error {
	if err := d.refuse("Sync"); err != nil {
		return err
	}
	d.flush()
	return nil
}

// Close runs the queued copies and frees every allocation still live,
// page-locked ones included.
func (d *Device) Close() error {
	d.flush()
	d.freeHost()
	d.mu.Lock()
	defer d.mu.Unlock()
	for p := range d.allocs {
		C.free(ptrOf(p))
	}
	d.allocs = map[cuda.DevicePtr]int{}
	return nil
}
