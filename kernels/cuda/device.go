package cuda

import (
	"fmt"
	"unsafe"
)

// DevicePtr is an address in device memory (host memory under emu).
type DevicePtr uintptr

// Dim3 is a grid or block size.
type Dim3 struct{ X, Y, Z uint32 }

// D1 and D2 build one- and two-dimensional sizes.
func D1(x int) Dim3    { return Dim3{uint32(x), 1, 1} }
func D2(x, y int) Dim3 { return Dim3{uint32(x), uint32(y), 1} }

// Device is what the backend needs from a CUDA device. Every method returns
// the device's error instead of dropping it. Work — copies, kernels, GEMMs —
// runs in issue order on the device's one stream, asynchronously to the
// host: the host learns that work is done only from WaitEvent or Sync.
// Host↔device data moves through page-locked (pinned) host memory from
// HostAlloc; the backend's staging (staging.go) copies the caller's Go
// memory into and out of it, so the same sequencing runs on the GPU and
// under emu.
type Device interface {
	// Name is the backend name it is registered under ("cuda", "emu").
	Name() string
	// GPU reports a real GPU; the emulator runs on the host, in its memory.
	GPU() bool
	// Alloc returns bytes of zeroed device memory.
	Alloc(bytes int) (DevicePtr, error)
	// Free releases p once the work issued before it is done.
	Free(p DevicePtr) error
	// HostAlloc returns bytes of page-locked host memory (cuMemHostAlloc),
	// the only host memory the async copies accept.
	HostAlloc(bytes int) (unsafe.Pointer, error)
	// HostFree releases page-locked memory; no queued copy may still use
	// it (wait for its event first).
	HostFree(p unsafe.Pointer) error
	// CopyHtoDAsync queues a copy from page-locked src on the stream: src
	// must stay unchanged until an event recorded after it has completed.
	CopyHtoDAsync(dst DevicePtr, src unsafe.Pointer, bytes int) error
	// CopyDtoHAsync queues a copy into page-locked dst on the stream: dst
	// holds the data only once an event recorded after it has completed.
	CopyDtoHAsync(dst unsafe.Pointer, src DevicePtr, bytes int) error
	CopyDtoD(dst, src DevicePtr, bytes int) error
	// Memset queues zeroing bytes of device memory at p on the stream
	// (cuMemsetD8Async), so memory the backend recycles in stream order
	// (pool.go) is zeroed as Alloc's contract says without a new
	// allocation.
	Memset(p DevicePtr, bytes int) error
	// Launch runs kernel name. args are DevicePtr, int32 or float32 values,
	// in the kernel's parameter order. A launch the GPU would refuse —
	// more threads than the kernel's __launch_bounds__, more registers
	// than a block has, static plus dynamic shared memory over
	// DefaultSharedPerBlock without SetMaxDynamicShared — is an error
	// naming the kernel and the limit (KernelFigures.CheckLaunch).
	Launch(name string, grid, block Dim3, sharedBytes int, args ...any) error
	// SetMaxDynamicShared opts kernel name into launches with up to bytes
	// of dynamic shared memory (cuFuncSetAttribute with
	// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), which the GPU
	// requires when static plus dynamic shared memory exceeds 48 KiB.
	SetMaxDynamicShared(name string, bytes int) error
	// Sgemm is cublasSgemm: column-major C = alpha·op(A)·op(B) + beta·C
	// with f32 inputs and f32 accumulation.
	Sgemm(transA, transB bool, m, n, k int, alpha float32, a DevicePtr, lda int, b DevicePtr, ldb int, beta float32, c DevicePtr, ldc int) error
	// GemmBF16 is cublasGemmEx with A and B of CUDA_R_16BF, C of
	// CUDA_R_32F, CUBLAS_COMPUTE_32F and the default algorithm:
	// column-major C = alpha·op(A)·op(B) + beta·C, bf16 products summed in
	// f32 (alpha and beta f32).
	GemmBF16(transA, transB bool, m, n, k int, alpha float32, a DevicePtr, lda int, b DevicePtr, ldb int, beta float32, c DevicePtr, ldc int) error
	// GemmBF16C is GemmBF16 with C of CUDA_R_16BF too: the same f32 sums,
	// alpha·sum + beta·C (C widened to f32) rounded to nearest-even at the
	// store.
	GemmBF16C(transA, transB bool, m, n, k int, alpha float32, a DevicePtr, lda int, b DevicePtr, ldb int, beta float32, c DevicePtr, ldc int) error
	// NewEvent creates an event (cuEventCreate, no timing).
	NewEvent() (Event, error)
	// Record marks in e the point the stream has reached with the work
	// issued so far (cuEventRecord).
	Record(e Event) error
	// WaitEvent blocks the host until the work issued before e's latest
	// Record is done (cuEventSynchronize); an event never recorded is done.
	WaitEvent(e Event) error
	// EventDone reports, without waiting, whether the work issued before
	// e's latest Record is done (cuEventQuery); the staging buffers use it
	// to pick a free buffer instead of waiting for a busy one.
	EventDone(e Event) (bool, error)
	DestroyEvent(e Event) error
	// NewTimingEvent creates an event that also notes when the stream
	// reached it (cuEventCreate without CU_EVENT_DISABLE_TIMING), for
	// Elapsed; the kernel profile (profile.go) is its one user.
	NewTimingEvent() (Event, error)
	// Elapsed is the milliseconds from start's latest Record to end's
	// (cuEventElapsedTime): an error unless both are timing events whose
	// recorded work is done (wait for end first).
	Elapsed(start, end Event) (float64, error)
	// BeginCapture starts recording the stream's work into a graph
	// instead of running it (cuStreamBeginCapture, thread-local mode):
	// until EndCapture, Launch, Sgemm, GemmBF16, GemmBF16C, CopyDtoD and Memset are
	// recorded, and calls that would make the host wait or touch host
	// memory (Alloc, Free, HostAlloc, HostFree, the async copies, Sync,
	// WaitEvent) are errors, as in a CUDA capture.
	BeginCapture() error
	// EndCapture ends the capture and returns the recorded work as an
	// executable graph (cuStreamEndCapture + cuGraphInstantiateWithFlags).
	EndCapture() (Graph, error)
	// LaunchGraph queues one replay of g on the stream (cuGraphLaunch): the
	// same kernels with the same arguments, reading whatever the buffers
	// they point at hold by then.
	LaunchGraph(g Graph) error
	DestroyGraph(g Graph) error
	// Sync waits for all issued work and returns its error.
	Sync() error
	Close() error
}

// Graph is a device's handle for an instantiated CUDA graph; 0 is never
// one.
type Graph uint64

// Event is a device's handle for a CUDA event; only the device that made it
// gives it meaning, and 0 is never one.
type Event uint64

// ArgBytes returns the little-endian bytes of one kernel argument as the
// kernel's parameter expects them (8 for pointers, 4 for int32/float32).
// Both devices marshal arguments through it, so a wrong Go type fails the
// same way on both.
func ArgBytes(a any) ([]byte, error) {
	switch v := a.(type) {
	case DevicePtr:
		return le(uint64(v), 8), nil
	case int32:
		return le(uint64(uint32(v)), 4), nil
	case float32:
		return le(uint64(*(*uint32)(unsafe.Pointer(&v))), 4), nil
	}
	return nil, fmt.Errorf("kernel argument of type %T: want DevicePtr, int32 or float32", a)
}

// ArgWord is ArgBytes as one little-endian word (the low 4 bytes for
// int32/float32), without allocating: the driver's 8-byte parameter slots.
func ArgWord(a any) (uint64, error) {
	switch v := a.(type) {
	case DevicePtr:
		return uint64(v), nil
	case int32:
		return uint64(uint32(v)), nil
	case float32:
		return uint64(*(*uint32)(unsafe.Pointer(&v))), nil
	}
	return 0, fmt.Errorf("kernel argument of type %T: want DevicePtr, int32 or float32", a)
}

func le(v uint64, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
	return b
}
