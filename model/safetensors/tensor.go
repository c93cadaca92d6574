package safetensors

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"unsafe"
)

// Tensor is one named array. Tensors from a File or Set alias its read-only
// mapping: never write to Bytes() or BF16Bits(), and do not use them after
// Close. Tensors built by NewF32/NewBF16/NewF16/NewTensor own their bytes.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	data  []byte
}

// NewTensor wraps raw little-endian bytes, checking that their length fits
// the shape and dtype.
func NewTensor(name string, dtype DType, shape []int, data []byte) (Tensor, error) {
	if !dtype.Valid() {
		return Tensor{}, fmt.Errorf("tensor %q: unknown dtype %q", name, dtype)
	}
	n, err := numElements(shape)
	if err != nil {
		return Tensor{}, fmt.Errorf("tensor %q: %v", name, err)
	}
	if uint64(len(data)) != n*uint64(dtype.Size()) {
		return Tensor{}, fmt.Errorf("tensor %q: %d bytes but shape %v of %s needs %d", name, len(data), shape, dtype, n*uint64(dtype.Size()))
	}
	return Tensor{Name: name, DType: dtype, Shape: slices.Clone(shape), data: data}, nil
}

// NewF32 builds an F32 tensor from values (copied).
func NewF32(name string, shape []int, values []float32) (Tensor, error) {
	b := make([]byte, 4*len(values))
	for i, v := range values {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return NewTensor(name, F32, shape, b)
}

// NewBF16 builds a BF16 tensor, rounding values to nearest even.
func NewBF16(name string, shape []int, values []float32) (Tensor, error) {
	return new16(name, BF16, shape, values, F32ToBF16)
}

// NewF16 builds an F16 tensor, rounding values to nearest even.
func NewF16(name string, shape []int, values []float32) (Tensor, error) {
	return new16(name, F16, shape, values, F32ToF16)
}

func new16(name string, dtype DType, shape []int, values []float32, conv func(float32) uint16) (Tensor, error) {
	b := make([]byte, 2*len(values))
	for i, v := range values {
		binary.LittleEndian.PutUint16(b[2*i:], conv(v))
	}
	return NewTensor(name, dtype, shape, b)
}

// Bytes returns the raw little-endian payload (read-only).
func (t Tensor) Bytes() []byte { return t.data }

// NumElements is the product of Shape (1 for a scalar).
func (t Tensor) NumElements() int { return len(t.data) / max(t.DType.Size(), 1) }

// Float32s converts an F32, F16 or BF16 tensor to a new float32 slice.
func (t Tensor) Float32s() ([]float32, error) {
	n := t.NumElements()
	out := make([]float32, n)
	switch t.DType {
	case F32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.data[4*i:]))
		}
	case F16:
		for i := range out {
			out[i] = F16ToF32(binary.LittleEndian.Uint16(t.data[2*i:]))
		}
	case BF16:
		for i := range out {
			out[i] = BF16ToF32(binary.LittleEndian.Uint16(t.data[2*i:]))
		}
	default:
		return nil, fmt.Errorf("tensor %q: dtype %s does not convert to float32 (only F32, F16 and BF16 do)", t.Name, t.DType)
	}
	return out, nil
}

// BF16Bits returns the raw bfloat16 bit patterns of a BF16 tensor, for
// upload to a device that computes in bf16. On little-endian hosts, when the
// payload is 2-byte aligned (always, for files this package writes), the
// slice aliases the mapping without a copy and is read-only. ok is false
// for any other dtype.
func (t Tensor) BF16Bits() (bits []uint16, ok bool) {
	if t.DType != BF16 {
		return nil, false
	}
	n := len(t.data) / 2
	if n == 0 {
		return []uint16{}, true
	}
	if littleEndianHost && uintptr(unsafe.Pointer(&t.data[0]))%2 == 0 {
		return unsafe.Slice((*uint16)(unsafe.Pointer(&t.data[0])), n), true
	}
	bits = make([]uint16, n)
	for i := range bits {
		bits[i] = binary.LittleEndian.Uint16(t.data[2*i:])
	}
	return bits, true
}

var littleEndianHost = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// numElements multiplies dims, rejecting negative dims and products above
// 2^60 elements (no real tensor comes close; the bound keeps the byte count,
// at most 8 bytes an element, inside a uint64).
func numElements(shape []int) (uint64, error) {
	n := uint64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("shape %v has a negative dimension", shape)
		}
		if d == 0 {
			n = 0
			continue
		}
		if n != 0 && n > (1<<60)/uint64(d) {
			return 0, fmt.Errorf("shape %v has more than 2^60 elements", shape)
		}
		n *= uint64(d)
	}
	return n, nil
}
