package cuda

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// memInfoDevice is a Device that can report its memory: the driver
// (cuMemGetInfo) and the emulator (the host's MemAvailable).
type memInfoDevice interface {
	MemInfo() (free, total int64, err error)
}

var _ kernels.MemoryReporter = (*Backend)(nil)

// MemInfo returns the free and total bytes of the backend's device. The
// pool's cached scratch counts as used: it stays allocated until Close.
func (b *Backend) MemInfo() (free, total int64, err error) {
	d, ok := b.dev.(memInfoDevice)
	if !ok {
		return 0, 0, fmt.Errorf("%s: the device cannot report its free memory", b.Name())
	}
	return d.MemInfo()
}
