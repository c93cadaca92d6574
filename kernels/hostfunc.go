package kernels

// HostFuncs is an optional Backend capability: host work queued in the
// backend's stream order, over device memory the host addresses (the
// emulator's, which is host memory). A collective that moves device
// memory through the host — kernels/inproc, NCCL's stand-in for emu
// devices — queues its exchange this way, so inside a graph capture it is
// recorded like a kernel and its ranks meet at each replay, as NCCL's
// send/recv captured on a GPU's stream do.
type HostFuncs interface {
	// HostMemory reports whether HostFunc can run here: false on a GPU,
	// whose memory the host cannot address (its collectives are NCCL's).
	HostMemory() bool
	// HostFunc queues f after the work issued before it and before the
	// work issued after it; f reads and writes the F32 or BF16 buffers
	// bufs through mem: mem[i] is bufs[i]'s elements as stored (4 bytes
	// an F32 element, 2 a BF16 one: its f32's upper half, little-endian),
	// valid while f runs.
	// With no capture open f runs before HostFunc returns, which returns
	// f's error; inside a capture f is recorded, not run, and runs at each
	// replay, where its error fails the replay (reported at Sync).
	HostFunc(bufs []Buffer, f func(mem [][]byte) error) error
}
