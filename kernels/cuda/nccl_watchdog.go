package cuda

import (
	"fmt"
	"time"
)

// ncclResultNames are ncclResult_t's values (nccl.h, unchanged since NCCL
// 2.12), for the messages written when ncclGetErrorString is not at hand
// (before the library is bound) and to say which results are failures.
var ncclResultNames = map[int]string{
	0: "ncclSuccess",
	1: "ncclUnhandledCudaError",
	2: "ncclSystemError",
	3: "ncclInternalError",
	4: "ncclInvalidArgument",
	5: "ncclInvalidUsage",
	6: "ncclRemoteError",
	7: "ncclInProgress",
}

const (
	ncclSuccess    = 0
	ncclInProgress = 7
)

// ncclFailed reports whether a result (of a call or of
// ncclCommGetAsyncError) is a failure: anything but success and a
// non-blocking communicator's "in progress".
func ncclFailed(r int) bool { return r != ncclSuccess && r != ncclInProgress }

// collectiveWatch is what the watchdog needs of an issued collective: done
// reports whether the stream has passed it (an event recorded after it),
// asyncErr is ncclCommGetAsyncError's result as an error (nil while the
// communicator is healthy), abort is ncclCommAbort, given the error that
// ends the collective.
type collectiveWatch struct {
	what     string
	done     func() (bool, error)
	asyncErr func() error
	abort    func(error)
	// timeout bounds the wait for a peer that is alive but never joins;
	// every is the polling interval.
	timeout, every time.Duration
}

// wait polls until the collective is done. A dead peer shows up as an
// asynchronous error (NCCL's proxy sees its socket close), a hung one only
// as a collective that never completes: either way the communicator is
// aborted — which ends the kernels spinning on the GPU — and the error
// says what happened, instead of the host waiting for ever on a stream
// that cannot finish.
func (w collectiveWatch) wait() error {
	start := time.Now()
	for {
		done, err := w.done()
		if err != nil {
			return w.fail(fmt.Errorf("nccl: %s: waiting for it: %w (communicator aborted)", w.what, err))
		}
		if done {
			return nil
		}
		if err := w.asyncErr(); err != nil {
			return w.fail(fmt.Errorf("nccl: %s: %w; a peer failed or left (communicator aborted)", w.what, err))
		}
		if waited := time.Since(start); waited > w.timeout {
			return w.fail(fmt.Errorf("nccl: %s: not finished after %v: a peer is hung or never called it (communicator aborted)", w.what, waited.Round(time.Millisecond)))
		}
		time.Sleep(w.every)
	}
}

func (w collectiveWatch) fail(err error) error {
	w.abort(err)
	return err
}
