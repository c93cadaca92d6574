package kernels

import (
	"errors"
	"fmt"
)

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
	// AllToAll is expert parallelism's token exchange, NCCL's grouped
	// send/recv (ncclGroupStart, an ncclSend and an ncclRecv per peer,
	// ncclGroupEnd): each rank sends every rank a slice of its own size
	// and receives one from every rank. send and recv are buffers of this
	// rank's backend, both F32 or both BF16 (CheckAllToAllDTypes; a bf16
	// layer's rows travel at 2 bytes an element, as NCCL's ncclBfloat16),
	// holding rows of width elements; send holds
	// sendRows[p] rows for each rank p, in rank order (this rank's own
	// rows included: they are copied), and recv receives recvRows[p] rows
	// from each rank p, in rank order, from its start; what lies past the
	// rows is left as it was. sendRows[p] on rank r must equal
	// recvRows[r] on rank p (ExchangeCounts tells every rank its
	// recvRows) and width must be the same on every rank; a mismatch
	// fails the collective. It is ordered after the work issued on the
	// backend before it and returns once recv holds every rank's rows;
	// send is not changed.
	AllToAll(send Buffer, sendRows []int, recv Buffer, recvRows []int, width int) error
	// ExchangeCounts is the all-to-all of counts that comes before
	// AllToAll: counts holds Size() blocks of k values, block p for rank
	// p (k the same on every rank: 1 for rows per rank, or one per
	// expert of that rank); the result holds Size() blocks of k, block p
	// the one rank p addressed to this rank. It returns once every rank
	// has called it.
	ExchangeCounts(counts []int) ([]int, error)
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

// CheckAllToAllDTypes is AllToAll's rule for its buffers' dtypes: both
// F32 or both BF16, so rows move as they are stored.
func CheckAllToAllDTypes(send, recv DType) error {
	if send != recv || send != F32 && send != BF16 {
		return fmt.Errorf("all-to-all of %v rows into %v: want F32 or BF16 buffers, both of one dtype", send, recv)
	}
	return nil
}

// CheckAllToAll is what one rank can check of its own AllToAll call on a
// group of size ranks before it joins the others: a positive width, a
// count for every rank, none negative, and rows that fit the send and
// receive buffers (of sendLen and recvLen elements).
func CheckAllToAll(size, sendLen int, sendRows []int, recvLen int, recvRows []int, width int) error {
	if width <= 0 || len(sendRows) != size || len(recvRows) != size {
		return fmt.Errorf("all-to-all of width %d with %d send and %d receive counts: want a positive width and a count for each of %d ranks",
			width, len(sendRows), len(recvRows), size)
	}
	for _, c := range []struct {
		what string
		rows []int
		n    int
	}{{"send", sendRows, sendLen}, {"receive", recvRows, recvLen}} {
		total := 0
		for _, r := range c.rows {
			if r < 0 {
				return fmt.Errorf("all-to-all %s counts %v: a count is negative", c.what, c.rows)
			}
			total += r
		}
		if total*width > c.n {
			return fmt.Errorf("all-to-all %s counts %v: %d rows of %d do not fit its buffer of %d elements", c.what, c.rows, total, width, c.n)
		}
	}
	return nil
}

// CheckCounts is what one rank can check of its ExchangeCounts call: a
// block of the same size for each of size ranks.
func CheckCounts(size int, counts []int) error {
	if len(counts) == 0 || len(counts)%size != 0 {
		return fmt.Errorf("%d counts: want a block of the same size for each of %d ranks", len(counts), size)
	}
	return nil
}
