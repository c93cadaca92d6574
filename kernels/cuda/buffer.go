package cuda

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// buffer is device memory of n elements of dt at ptr. Views share the
// parent's memory; only the root allocation is freed. A buffer whose
// allocation failed has bad set: ops skip it (the error is already queued
// for Sync) rather than handing address 0 to a kernel.
type buffer struct {
	owner *Backend
	ptr   DevicePtr
	n     int
	dt    kernels.DType
	root  bool
	bad   bool
}

func (x *buffer) Len() int             { return x.n }
func (x *buffer) DType() kernels.DType { return x.dt }

func (x *buffer) Slice(off, n int) kernels.Buffer {
	if off < 0 || n < 0 || off+n > x.n {
		panic(fmt.Sprintf("cuda: Slice(%d, %d) of a buffer of %d elements", off, n, x.n))
	}
	return &buffer{owner: x.owner, ptr: x.ptr + DevicePtr(off*x.dt.Size()), n: n, dt: x.dt, bad: x.bad}
}

func (x *buffer) bytes() int { return x.n * x.dt.Size() }
