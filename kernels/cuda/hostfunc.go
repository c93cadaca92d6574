package cuda

import (
	"fmt"
	"unsafe"

	"github.com/grpo-dev/grpo/kernels"
)

// hostMemoryDevice is a device whose memory the host addresses directly
// (the emulator): host work can be queued in its stream order, captured
// into graphs as kernels are (kernels.HostFuncs).
type hostMemoryDevice interface {
	// LaunchHostFunc runs f in stream order — at once, after the work
	// queued before it, or recorded into the open capture to run at each
	// replay — as cuLaunchHostFunc queues a host function on a stream.
	LaunchHostFunc(f func() error) error
	// HostAddress is device memory at p as the host addresses it.
	HostAddress(p DevicePtr) unsafe.Pointer
}

var _ kernels.HostFuncs = (*Backend)(nil)

// HostMemory: the emulator's memory is the host's; a GPU's is not.
func (b *Backend) HostMemory() bool {
	_, ok := b.dev.Device.(hostMemoryDevice)
	return ok
}

// HostFunc queues f on the device's stream (kernels.HostFuncs), recorded
// into the graph while one is being captured.
func (b *Backend) HostFunc(bufs []kernels.Buffer, f func(mem [][]byte) error) error {
	d, ok := b.dev.Device.(hostMemoryDevice)
	if !ok {
		return fmt.Errorf("%s: HostFunc: the device's memory is not the host's (a GPU's collectives are NCCL's)", b.Name())
	}
	xs := make([]*buffer, len(bufs))
	for i, x := range bufs {
		xs[i] = b.buf("HostFunc", "buffer", x, 0, kernels.F32, kernels.BF16)
		if !usable(xs[i]) {
			return fmt.Errorf("%s: HostFunc over a buffer whose allocation failed", b.Name())
		}
	}
	b.pending = true
	return d.LaunchHostFunc(func() error {
		mem := make([][]byte, len(xs))
		for i, x := range xs {
			if x.n > 0 {
				mem[i] = unsafe.Slice((*byte)(d.HostAddress(x.ptr)), x.n*x.dt.Size())
			}
		}
		return f(mem)
	})
}
