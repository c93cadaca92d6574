//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/grpo-dev/grpo/kernels"
)

// ncclComm is kernels.Collective over an NCCL communicator, one per rank
// (one device of one process). Its collectives run on the backend's one
// stream, after the work queued before them; the host then waits for them
// under the watchdog (nccl_watchdog.go), so a dead or hung peer ends the
// call with an error instead of a hang. Inside a graph capture (an
// expert-parallel decode step's fixed all-to-alls, model/decode_ep.go)
// they are captured instead, and each replay is waited for under the
// watchdog (run).
type ncclComm struct {
	b          *Backend
	d          *driverDevice
	rank, size int
	timeout    time.Duration
	scratch    kernels.Buffer // Barrier's one float

	mu   sync.Mutex // guards comm and err against Abort from another goroutine
	comm unsafe.Pointer
	err  error // set once aborted; every later call returns it
}

// NewNCCL joins rank of size to the communicator of id (ncclGetUniqueId's
// bytes, the same on every rank: NCCLUniqueID on rank 0, handed out by the
// rendezvous), on backend b's device. A rank is a device, not a process:
// a process driving D devices calls NewNCCL once per device, each from
// its own goroutine (the call blocks until all have joined). ncclCommInitRank waits for every
// rank: the rendezvous has seen them all alive just before. timeout bounds
// each later collective's wait for its peers.
func NewNCCL(b kernels.Backend, id [NCCLUniqueIDBytes]byte, rank, size int, timeout time.Duration) (kernels.Collective, error) {
	cb, ok := b.(*Backend)
	if !ok {
		return nil, fmt.Errorf("nccl: the %s backend has no NCCL communicator: its devices use kernels/inproc", b.Name())
	}
	d, ok := cb.dev.Device.(*driverDevice)
	if !ok {
		return nil, fmt.Errorf("nccl: the %s device is not a GPU: use kernels/inproc", cb.dev.Name())
	}
	if rank < 0 || rank >= size {
		return nil, fmt.Errorf("nccl: rank %d of %d", rank, size)
	}
	if err := loadNCCL(); err != nil {
		return nil, err
	}
	c := &ncclComm{b: cb, d: d, rank: rank, size: size, timeout: timeout}
	err := d.do(func() (err error) {
		c.comm, err = ncclInitRank(id, rank, size)
		return err
	})
	if err != nil {
		return nil, err
	}
	c.scratch = cb.Alloc(kernels.F32, 1)
	return c, nil
}

func (c *ncclComm) Rank() int { return c.rank }
func (c *ncclComm) Size() int { return c.size }

func (c *ncclComm) AllReduceSum(buf kernels.Buffer) error {
	x, ok := buf.(*buffer)
	if !ok || x.owner != c.b || x.dt != kernels.F32 {
		err := fmt.Errorf("nccl: rank %d: all-reduce of a %v buffer not of this rank's backend: want its F32 buffer", c.rank, buf.DType())
		c.Abort(err)
		return errors.Join(err, kernels.ErrCollectiveAborted)
	}
	return c.allReduce(x.ptr, x.n, fmt.Sprintf("all-reduce of %d floats (rank %d of %d)", x.n, c.rank, c.size))
}

func (c *ncclComm) Barrier() error {
	return c.allReduce(c.scratch.(*buffer).ptr, 1, fmt.Sprintf("barrier (rank %d of %d)", c.rank, c.size))
}

// allReduce issues ncclAllReduce(sum, f32) in place on the stream and
// waits for it under the watchdog.
func (c *ncclComm) allReduce(p DevicePtr, n int, what string) error {
	return c.run(what, func(comm, stream unsafe.Pointer) error {
		return ncclAllReduceSumF32(what, p, p, n, comm, stream)
	})
}

// run issues a collective on the stream, after the work queued before
// it, and waits for it under the watchdog. Inside a graph capture it
// only issues it — NCCL's send/recv are captured on the stream as
// kernels are, and a capture allows no host wait — and each replay of
// the graph is waited for under the watchdog instead (watchReplays).
func (c *ncclComm) run(what string, issue func(comm, stream unsafe.Pointer) error) error {
	if err := c.failed(); err != nil {
		return err
	}
	capturing := c.b.capturing != nil
	if !capturing {
		if err := c.b.Sync(); err != nil { // an earlier op's error is this rank's, not NCCL's
			c.Abort(err)
			return fmt.Errorf("nccl: %s: the backend failed before it: %w", what, err)
		}
	}
	err := c.d.do(func() error {
		// Held while issuing, so an Abort from another goroutine cannot
		// free the communicator under the call.
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.comm == nil {
			return nil
		}
		return issue(c.comm, unsafe.Pointer(c.d.stream.C()))
	})
	if err != nil {
		c.abort(err)
		return fmt.Errorf("%w: %w", kernels.ErrCollectiveAborted, err)
	}
	if capturing {
		c.b.watchReplays(c, func() error {
			return c.watchStream(fmt.Sprintf("a graph replay's collectives (rank %d of %d)", c.rank, c.size))
		})
		return nil
	}
	return c.watchStream(what)
}

// watchStream waits under the watchdog for the work issued on the stream
// so far (an event recorded after it).
func (c *ncclComm) watchStream(what string) error {
	ev, err := c.d.NewEvent()
	if err == nil {
		defer c.d.DestroyEvent(ev)
		err = c.d.Record(ev)
	}
	if err != nil {
		c.abort(err)
		return fmt.Errorf("%w: %w", kernels.ErrCollectiveAborted, err)
	}
	if err := c.failed(); err != nil {
		return err
	}
	werr := collectiveWatch{what: what, done: func() (bool, error) { return c.d.EventDone(ev) },
		asyncErr: c.asyncErr, abort: c.abort, timeout: c.timeout, every: time.Millisecond}.wait()
	if werr != nil {
		return fmt.Errorf("%w: %w", kernels.ErrCollectiveAborted, werr)
	}
	return nil
}

// asyncErr is ncclCommGetAsyncError as an error (the abort's reason once
// aborted, when the communicator is gone).
func (c *ncclComm) asyncErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	return ncclAsyncError(c.comm)
}

func (c *ncclComm) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *ncclComm) Abort(reason error) { c.abort(fmt.Errorf("rank %d aborted: %w", c.rank, reason)) }

// abort is ncclCommAbort, once: it ends this rank's outstanding NCCL
// kernels and frees the communicator; peers then see a remote error.
func (c *ncclComm) abort(reason error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = fmt.Errorf("%w: %w", kernels.ErrCollectiveAborted, reason)
	}
	if c.comm != nil {
		ncclAbort(c.comm) // its own failure changes nothing: the communicator is unusable either way
		c.comm = nil
	}
}

// Close destroys a healthy communicator (ncclCommDestroy); an aborted one
// is already gone.
func (c *ncclComm) Close() error {
	c.b.Free(c.scratch)
	c.mu.Lock()
	comm := c.comm
	c.comm = nil
	if c.err == nil {
		c.err = fmt.Errorf("%w: closed", kernels.ErrCollectiveAborted)
	}
	c.mu.Unlock()
	if comm == nil {
		return nil
	}
	return c.d.do(func() error { return ncclDestroy(comm) })
}
