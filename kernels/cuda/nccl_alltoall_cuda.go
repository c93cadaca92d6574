//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/grpo-dev/grpo/kernels"
)

// AllToAll is one NCCL group of an ncclSend and an ncclRecv per peer
// (ncclSendRecv), on the stream after the work queued before it, waited
// for under the watchdog as the all-reduce is. NCCL matches each send
// with the peer's receive of the same count; a count the peers disagree
// on is the caller's bug that NCCL may not detect, so ExchangeCounts
// comes first.
func (c *ncclComm) AllToAll(send kernels.Buffer, sendRows []int, recv kernels.Buffer, recvRows []int, width int) error {
	s, sok := send.(*buffer)
	r, rok := recv.(*buffer)
	err := kernels.CheckAllToAll(c.size, send.Len(), sendRows, recv.Len(), recvRows, width)
	if e := kernels.CheckAllToAllDTypes(send.DType(), recv.DType()); e != nil {
		err = e
	}
	if !sok || !rok || s.owner != c.b || r.owner != c.b {
		err = fmt.Errorf("all-to-all of buffers not of this rank's backend")
	}
	if err != nil {
		err = fmt.Errorf("nccl: rank %d: %w", c.rank, err)
		c.Abort(err)
		return errors.Join(err, kernels.ErrCollectiveAborted)
	}
	dt := ncclFloat32
	if s.dt == kernels.BF16 {
		dt = ncclBfloat16
	}
	sp, sn := peerSlices(s.ptr, sendRows, width, s.dt.Size())
	rp, rn := peerSlices(r.ptr, recvRows, width, r.dt.Size())
	what := fmt.Sprintf("all-to-all of rows of %d %v, %v out and %v in (rank %d of %d)", width, s.dt, sendRows, recvRows, c.rank, c.size)
	return c.run(what, func(comm, stream unsafe.Pointer) error {
		return ncclSendRecv(dt, sp, rp, sn, rn, comm, stream)
	})
}

// ExchangeCounts sends each peer its block of counts as int32 through
// device buffers (NCCL moves device memory only), one group of
// send/recv pairs of k elements each, and reads the received blocks back.
func (c *ncclComm) ExchangeCounts(counts []int) ([]int, error) {
	err := kernels.CheckCounts(c.size, counts)
	host := make([]int32, len(counts))
	for i, n := range counts {
		if n < math.MinInt32 || n > math.MaxInt32 {
			err = fmt.Errorf("count %d does not fit the int32 the counts travel as", n)
		}
		host[i] = int32(n)
	}
	if err != nil {
		err = fmt.Errorf("nccl: rank %d: %w", c.rank, err)
		c.Abort(err)
		return nil, errors.Join(err, kernels.ErrCollectiveAborted)
	}
	k := len(counts) / c.size
	sb, rb := c.b.Alloc(kernels.I32, len(counts)), c.b.Alloc(kernels.I32, len(counts))
	defer c.b.Free(sb)
	defer c.b.Free(rb)
	c.b.UploadI32(sb, host)
	each := make([]int, c.size)
	for i := range each {
		each[i] = 1
	}
	sp, sn := peerSlices(sb.(*buffer).ptr, each, k, 4)
	rp, rn := peerSlices(rb.(*buffer).ptr, each, k, 4)
	what := fmt.Sprintf("count exchange of %d per rank (rank %d of %d)", k, c.rank, c.size)
	if err := c.run(what, func(comm, stream unsafe.Pointer) error {
		return ncclSendRecv(ncclInt32, sp, rp, sn, rn, comm, stream)
	}); err != nil {
		return nil, err
	}
	c.b.DownloadI32(host, rb)
	out := make([]int, len(host))
	for i, v := range host {
		out[i] = int(v)
	}
	return out, nil
}

// peerSlices cuts a buffer at p into one slice per rank of rows[rank]
// rows of width elements of size bytes, in rank order: each slice's start
// and its element count.
func peerSlices(p DevicePtr, rows []int, width, size int) ([]DevicePtr, []int) {
	ptrs, counts := make([]DevicePtr, len(rows)), make([]int, len(rows))
	at := 0
	for i, n := range rows {
		ptrs[i] = p + DevicePtr(at*width*size)
		counts[i] = n * width
		at += n
	}
	return ptrs, counts
}
