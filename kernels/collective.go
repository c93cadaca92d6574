package kernels

import "errors"

// Collective is one rank's handle on a group of devices that reduce
// together — NCCL's communicator, or its in-process emulation
// (kernels/inproc) for cpu and emu backends. It has NCCL's semantics:
// every rank of the group makes the same calls in the same order with the
// same element counts; a call returns on a rank once every rank has made
// it; and the first failure — a peer that never arrives, a mismatched
// call, an abort — ends the collective for good: that call and every
// later one return an error wrapping ErrCollectiveAborted on every rank,
// so a data-parallel step fails whole instead of hanging on a dead peer.
type Collective interface {
	// Rank is this handle's place in the group, 0 to Size()-1.
	Rank() int
	// Size is the number of ranks.
	Size() int
	// AllReduceSum replaces the F32 buffer buf, allocated by this rank's
	// backend, with the elementwise sum of every rank's buf, in place. It
	// is ordered after the work issued on the backend before it and
	// returns once the sum is in buf. Every rank gets the same bits.
	AllReduceSum(buf Buffer) error
	// Barrier returns once every rank has called it.
	Barrier() error
	// Abort ends the collective with reason: calls waiting on any rank
	// return, and later calls fail. It is safe to call more than once and
	// from any goroutine.
	Abort(reason error)
	// Close releases the collective (after Abort or once the group is
	// done); it does not wait for peers.
	Close() error
}

// ErrCollectiveAborted is wrapped by every error a Collective returns
// once it has failed or been aborted.
var ErrCollectiveAborted = errors.New("collective aborted")
