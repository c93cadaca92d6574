package cuda

import "github.com/grpo-dev/grpo/kernels"

// memInfoDevice is a Device that can report its memory: the driver
// (cuMemGetInfo) and the emulator (the host's MemAvailable).
type memInfoDevice interface {
	MemInfo() (free, total int64, err error)
}

var _ kernels.MemoryReporter = (*Backend)(nil)

// MemInfo returns the free and total bytes of the backend's device. The
// pool's cached blocks count as free: the next allocations reuse them, or
// free them when the device runs short.
func (b *Backend) MemInfo() (free, total int64, err error) {
	free, total, err = b.dev.MemInfo()
	return free + b.pool.cachedBytes, total, err
}
