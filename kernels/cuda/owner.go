package cuda

import (
	"errors"
	"runtime"
)

// ownerThread runs closures on one goroutine locked to its OS thread — the
// thread a CUDA context is current on — and batches the ones that return
// no value: queue appends a closure to the caller's batch and hands the
// batch over (one channel round trip) only when it is full or when a call
// that must return something (do) needs everything before it done. A
// kernel launch then costs the caller the marshalling and an append, not
// a goroutine hop (BenchmarkLaunchHostCost). A queued closure's error
// comes back from the call that hands its batch over; the backend queues
// errors until Sync anyway.
type ownerThread struct {
	work    chan []func() error
	errs    chan error
	quit    chan struct{}
	pending []func() error
}

// maxBatch is the most closures queued before they are handed over, so a
// long run of launches still reaches the GPU while the host issues more.
const maxBatch = 32

// startOwner starts the thread and runs setup on it first; its error
// stops the thread.
func startOwner(setup func() error) (*ownerThread, error) {
	o := &ownerThread{work: make(chan []func() error), errs: make(chan error), quit: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := setup(); err != nil {
			started <- err
			return
		}
		started <- nil
		for {
			select {
			case batch := <-o.work:
				var errs []error
				for _, f := range batch {
					if err := f(); err != nil {
						errs = append(errs, err)
					}
				}
				o.errs <- errors.Join(errs...)
			case <-o.quit:
				return
			}
		}
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return o, nil
}

// queue adds f to the batch; it returns the error of the batch it handed
// over, if it had to.
func (o *ownerThread) queue(f func() error) error {
	o.pending = append(o.pending, f)
	if len(o.pending) < maxBatch {
		return nil
	}
	return o.flush()
}

// do runs the queued closures and then f on the thread, in one hop, and
// returns their errors.
func (o *ownerThread) do(f func() error) error {
	o.pending = append(o.pending, f)
	return o.flush()
}

func (o *ownerThread) flush() error {
	if len(o.pending) == 0 {
		return nil
	}
	batch := o.pending
	o.pending = make([]func() error, 0, maxBatch)
	o.work <- batch
	return <-o.errs
}

// stop ends the thread after it has run what is queued.
func (o *ownerThread) stop() error {
	err := o.flush()
	close(o.quit)
	return err
}
