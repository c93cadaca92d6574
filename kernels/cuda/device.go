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
// the device's error instead of dropping it. Work is ordered as issued (one
// stream); Copy*ToH waits for earlier work.
type Device interface {
	// Name is the backend name it is registered under ("cuda", "emu").
	Name() string
	// Alloc returns bytes of zeroed device memory.
	Alloc(bytes int) (DevicePtr, error)
	Free(p DevicePtr) error
	CopyHtoD(dst DevicePtr, src unsafe.Pointer, bytes int) error
	CopyDtoH(dst unsafe.Pointer, src DevicePtr, bytes int) error
	CopyDtoD(dst, src DevicePtr, bytes int) error
	// Launch runs kernel name. args are DevicePtr, int32 or float32 values,
	// in the kernel's parameter order.
	Launch(name string, grid, block Dim3, sharedBytes int, args ...any) error
	// Sgemm is cublasSgemm: column-major C = alpha·op(A)·op(B) + beta·C
	// with f32 inputs and f32 accumulation.
	Sgemm(transA, transB bool, m, n, k int, alpha float32, a DevicePtr, lda int, b DevicePtr, ldb int, beta float32, c DevicePtr, ldc int) error
	// Sync waits for all issued work.
	Sync() error
	Close() error
}

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

func le(v uint64, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
	return b
}
