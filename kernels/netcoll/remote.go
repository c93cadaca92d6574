package netcoll

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/grpo-dev/grpo/kernels"
)

// grace is how much longer than the hub's timeout a remote rank waits for
// an answer, so that the hub's verdict — which names the missing rank —
// arrives before the rank gives up on its own.
const grace = 2 * time.Second

// remote is the Collective of a rank in another process than the hub's:
// each call goes to the hub as a request and returns with its reply.
type remote struct {
	c          *conn
	addr       string
	rank, size int
	b          kernels.Backend
	timeout    time.Duration

	call sync.Mutex // one call at a time, as on a stream
	wmu  sync.Mutex // writes: a call's, Abort's, Close's
	mu   sync.Mutex
	err  error // set once the collective failed or was aborted
}

// Dial joins rank (of size) to the hub of id, on host (MASTER_ADDR); its
// buffers move through backend b. It waits at most timeout for the hub.
func Dial(host string, id ID, rank, size int, b kernels.Backend, timeout time.Duration) (kernels.Collective, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(int(id.Port)))
	nc, err := (&net.Dialer{Timeout: timeout, KeepAliveConfig: keepAlive}).Dial("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("netcoll: rank %d cannot reach rank 0's hub at %s: %w", rank, addr, err)
	}
	c := newConn(nc)
	var r helloReply
	if err := c.send(hello{Key: id.Key, Rank: rank, Size: size}, timeout); err == nil {
		err = c.recv(&r, timeout)
	}
	if err != nil || r.Err != "" {
		nc.Close()
		if err == nil {
			err = errors.New(r.Err)
		}
		return nil, fmt.Errorf("netcoll: rank %d joining rank 0's hub at %s: %w", rank, addr, err)
	}
	return &remote{c: c, addr: addr, rank: rank, size: size, b: b, timeout: timeout}, nil
}

func (m *remote) Rank() int { return m.rank }
func (m *remote) Size() int { return m.size }

// failed is the error every call returns once the collective has failed.
func (m *remote) failed() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// fail records the collective's first failure and returns it.
func (m *remote) fail(reason error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err == nil {
		m.err = aborted(reason)
	}
	return m.err
}

// do sends q to the hub and waits for its reply.
func (m *remote) do(q request) (reply, error) {
	m.call.Lock()
	defer m.call.Unlock()
	if err := m.failed(); err != nil {
		return reply{}, err
	}
	m.wmu.Lock()
	err := m.c.send(q, m.timeout)
	m.wmu.Unlock()
	if err != nil {
		return reply{}, m.fail(fmt.Errorf("netcoll: rank %d sending its %s to rank 0's hub at %s: %w", m.rank, q.Op, m.addr, err))
	}
	var r reply
	if err := m.c.recv(&r, m.timeout+grace); err != nil {
		if e := m.failed(); e != nil {
			return reply{}, e // aborted here while waiting
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return reply{}, m.fail(fmt.Errorf("netcoll: rank %d: rank 0's hub at %s did not answer its %s within %v", m.rank, m.addr, q.Op, m.timeout+grace))
		}
		return reply{}, m.fail(fmt.Errorf("netcoll: rank %d: rank 0 of %d (hub %s) is gone during its %s: the connection closed (rank 0's process exited?): %v", m.rank, m.size, m.addr, q.Op, err))
	}
	if r.Err != "" {
		return reply{}, m.fail(errors.New(strings.TrimPrefix(r.Err, kernels.ErrCollectiveAborted.Error()+": ")))
	}
	return r, nil
}

// download reads buf to the host, in stream order.
func (m *remote) download(buf kernels.Buffer) ([]float32, error) {
	host := make([]float32, buf.Len())
	m.b.Download(host, buf)
	if err := m.b.Sync(); err != nil {
		err = fmt.Errorf("netcoll: rank %d: its backend failed before the call: %w", m.rank, err)
		m.Abort(err)
		return nil, err
	}
	return host, nil
}

// refuse aborts the collective over a call this rank can tell is wrong
// on its own.
func (m *remote) refuse(err error) error {
	err = fmt.Errorf("netcoll: rank %d: %w", m.rank, err)
	m.Abort(err)
	return m.failed()
}

func (m *remote) AllReduceSum(buf kernels.Buffer) error {
	if buf.DType() != kernels.F32 {
		return m.refuse(fmt.Errorf("all-reduce of a %v buffer: want F32", buf.DType()))
	}
	host, err := m.download(buf)
	if err != nil {
		return err
	}
	r, err := m.do(request{Op: "all-reduce", Values: host})
	if err != nil {
		return err
	}
	if len(r.Values) != len(host) {
		return m.fail(fmt.Errorf("netcoll: rank %d: the hub returned %d sums for %d values", m.rank, len(r.Values), len(host)))
	}
	m.b.Upload(buf, r.Values)
	return m.b.Sync()
}

func (m *remote) AllToAll(send kernels.Buffer, sendRows []int, recv kernels.Buffer, recvRows []int, width int) error {
	if err := kernels.CheckAllToAllDTypes(send.DType(), recv.DType()); err != nil {
		return m.refuse(err)
	}
	if err := kernels.CheckAllToAll(m.size, send.Len(), sendRows, recv.Len(), recvRows, width); err != nil {
		return m.refuse(err)
	}
	host, err := m.download(send)
	if err != nil {
		return err
	}
	r, err := m.do(request{Op: "all-to-all", Values: host, RecvLen: recv.Len(), Width: width, DType: send.DType(), SendRows: sendRows, RecvRows: recvRows})
	if err != nil {
		return err
	}
	out := make([]float32, recv.Len())
	m.b.Download(out, recv) // the tail past the rows is kept
	copy(out, r.Values)
	m.b.Upload(recv, out)
	return m.b.Sync()
}

func (m *remote) ExchangeCounts(counts []int) ([]int, error) {
	if err := kernels.CheckCounts(m.size, counts); err != nil {
		return nil, m.refuse(err)
	}
	r, err := m.do(request{Op: "counts", Counts: counts})
	return r.Counts, err
}

func (m *remote) Barrier() error {
	_, err := m.do(request{Op: "barrier"})
	return err
}

// Abort fails this rank's calls and tells the hub, which fails every
// rank's; a call waiting for the hub returns at once.
func (m *remote) Abort(reason error) {
	m.mu.Lock()
	first := m.err == nil
	if first {
		m.err = aborted(fmt.Errorf("rank %d aborted: %w", m.rank, reason))
	}
	m.mu.Unlock()
	if !first {
		return
	}
	m.wmu.Lock()
	m.c.send(request{Op: "abort", Reason: reason.Error()}, time.Second) // best effort: the hub names this rank
	m.wmu.Unlock()
	m.c.c.SetReadDeadline(time.Now()) // wakes a call waiting for its reply
}

// Close says goodbye to the hub, so it does not take the closing
// connection for a dead rank, and closes it.
func (m *remote) Close() error {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	if m.failed() == nil {
		m.c.send(request{Op: "bye"}, time.Second)
	}
	return m.c.c.Close()
}
