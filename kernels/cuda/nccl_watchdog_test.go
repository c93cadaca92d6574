package cuda

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// fakeCollective plays an issued NCCL collective: it completes after
// doneAfter polls (never when negative), and the communicator reports an
// asynchronous error from poll errAt on (never when negative).
type fakeCollective struct {
	polls, doneAfter, errAt int
	aborts                  int
}

func (f *fakeCollective) watch(timeout time.Duration) collectiveWatch {
	return collectiveWatch{
		what: "all-reduce of 8 floats",
		done: func() (bool, error) {
			f.polls++
			return f.doneAfter >= 0 && f.polls > f.doneAfter, nil
		},
		asyncErr: func() error {
			if f.errAt >= 0 && f.polls >= f.errAt {
				return errors.New("ncclRemoteError: remote process exited or there was a network error")
			}
			return nil
		},
		abort:   func(error) { f.aborts++ },
		timeout: timeout,
		every:   time.Millisecond,
	}
}

// TestWatchdog: a collective that completes returns without an abort; a
// peer's death reported by ncclCommGetAsyncError aborts once and names the
// error; a collective that never completes aborts at the timeout instead
// of waiting for ever; an error waiting for the event aborts too.
func TestWatchdog(t *testing.T) {
	ok := &fakeCollective{doneAfter: 3, errAt: -1}
	if err := ok.watch(time.Minute).wait(); err != nil || ok.aborts != 0 || ok.polls != 4 {
		t.Errorf("completing collective: %v, %d aborts, %d polls", err, ok.aborts, ok.polls)
	}
	dead := &fakeCollective{doneAfter: -1, errAt: 2}
	err := dead.watch(time.Minute).wait()
	if err == nil || dead.aborts != 1 || !strings.Contains(err.Error(), "all-reduce of 8 floats: ncclRemoteError") {
		t.Errorf("dead peer: %v, %d aborts", err, dead.aborts)
	}
	hung := &fakeCollective{doneAfter: -1, errAt: -1}
	start := time.Now()
	err = hung.watch(30 * time.Millisecond).wait()
	if err == nil || hung.aborts != 1 || !strings.Contains(err.Error(), "a peer is hung") || time.Since(start) > 5*time.Second {
		t.Errorf("hung peer: %v after %v, %d aborts", err, time.Since(start), hung.aborts)
	}
	broken := &fakeCollective{errAt: -1}
	w := broken.watch(time.Minute)
	w.done = func() (bool, error) { return false, errors.New("cuEventQuery: CUDA_ERROR_ILLEGAL_ADDRESS") }
	if err := w.wait(); err == nil || broken.aborts != 1 || !strings.Contains(err.Error(), "CUDA_ERROR_ILLEGAL_ADDRESS") {
		t.Errorf("event error: %v, %d aborts", err, broken.aborts)
	}
	for r, failed := range map[int]bool{0: false, 7: false, 2: true, 6: true} {
		if ncclFailed(r) != failed {
			t.Errorf("ncclFailed(%s) = %v", ncclResultNames[r], !failed)
		}
	}
}
