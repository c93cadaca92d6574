package kernels

// MemoryReporter is implemented by backends that can say how much of their
// device's memory is free, so a run can be refused before it starts
// rather than fail with an out-of-memory error at its first large step.
// It is optional: test for it with a type assertion. The cuda backend
// reports cuMemGetInfo; emu, whose "device memory" is the host's, reports
// the host's MemAvailable. The CPU backend does not implement it (the
// estimate package reads /proc/meminfo itself).
type MemoryReporter interface {
	// MemInfo returns the free and total bytes of the backend's device.
	MemInfo() (free, total int64, err error)
}
