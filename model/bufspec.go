package model

import "github.com/grpo-dev/grpo/kernels"

// bufSpec is one buffer of an activation or scratch set: the field it
// goes to, its dtype and elements. A set's allocator lists its buffers
// as bufSpecs and allocates them in one loop, and the exported sizes
// (train_sizes.go) sum the same list, so the sizes the estimate prices
// are the ones allocated by construction.
type bufSpec struct {
	dst *kernels.Buffer
	dt  kernels.DType
	n   int
}

type bufSpecs []bufSpec

// f32 and i32 add a buffer of n elements for dst; n ≤ 0 adds none (an
// unadapted projection's x·Aᵀ stays nil).
func (s *bufSpecs) f32(dst *kernels.Buffer, n int) { s.add(dst, kernels.F32, n) }
func (s *bufSpecs) i32(dst *kernels.Buffer, n int) { s.add(dst, kernels.I32, n) }

func (s *bufSpecs) add(dst *kernels.Buffer, dt kernels.DType, n int) {
	if n > 0 {
		*s = append(*s, bufSpec{dst, dt, n})
	}
}

// alloc allocates every buffer in a.
func (s bufSpecs) alloc(a *arena) {
	for _, b := range s {
		*b.dst = a.alloc(b.dt, b.n)
	}
}

// allocOn allocates every buffer straight on be: buffers a caller owns
// and frees.
func (s bufSpecs) allocOn(be kernels.Backend) {
	for _, b := range s {
		*b.dst = be.Alloc(b.dt, b.n)
	}
}

// bytes is what the set allocates, each buffer at its dtype's size.
func (s bufSpecs) bytes() int64 {
	var n int64
	for _, b := range s {
		n += int64(b.n) * int64(b.dt.Size())
	}
	return n
}
