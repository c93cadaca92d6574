package emu

import (
	"unsafe"

	"github.com/grpo-dev/grpo/kernels/cuda"
)

// LaunchHostFunc runs f in stream order: after the copies queued before
// it, at once, or — inside a capture — recorded as one of the graph's
// ops, run at each replay (the backend's kernels.HostFuncs).
func (d *Device) LaunchHostFunc(f func() error) error {
	run := func() error {
		d.flush()
		return f()
	}
	if d.record(run) {
		return nil
	}
	return run()
}

// HostAddress: the emulated device's memory is host memory.
func (d *Device) HostAddress(p cuda.DevicePtr) unsafe.Pointer { return ptrOf(p) }
