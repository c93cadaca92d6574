package netcoll

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/inproc"
)

// keepAlive makes the kernel notice a peer whose node stopped answering
// (no FIN: a power loss, a partition) within about 20 s, as the
// rendezvous's connections do.
var keepAlive = net.KeepAliveConfig{Enable: true, Idle: 5 * time.Second, Interval: 5 * time.Second, Count: 3}

// Hub is rank 0's side: the group every rank's calls meet in.
type Hub struct {
	id      ID
	size    int
	local   int // ranks 0..local-1 are this process's devices
	timeout time.Duration
	group   *inproc.Group
	ln      net.Listener

	mu      sync.Mutex
	joined  []bool
	conns   []*conn
	open    int // local members not yet closed
	closing bool
}

// Listen starts the hub of a job of size ranks, the first local of them
// this process's own devices (Join), the others dialling in (Dial). It
// listens on every interface, on a port the system picks: ID says which.
// A call waits at most timeout for the last rank to arrive.
func Listen(size, local int, timeout time.Duration) (*Hub, error) {
	if local < 1 || local > size {
		return nil, fmt.Errorf("netcoll: %d local ranks of %d: want 1 to %d", local, size, size)
	}
	g, err := inproc.NewGroup(size, timeout)
	if err != nil {
		return nil, err
	}
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	ln, err := (&net.ListenConfig{KeepAliveConfig: keepAlive}).Listen(context.Background(), "tcp", ":0")
	if err != nil {
		return nil, fmt.Errorf("netcoll: rank 0 cannot listen for the other ranks: %w", err)
	}
	h := &Hub{id: ID{Port: uint16(ln.Addr().(*net.TCPAddr).Port), Key: key}, size: size, local: local, timeout: timeout,
		group: g, ln: ln, joined: make([]bool, size), open: local}
	go h.accept()
	return h, nil
}

// ID is what the other ranks need to reach the hub.
func (h *Hub) ID() ID { return h.id }

// Calls counts the group's completed calls of op (inproc.Group.Calls).
func (h *Hub) Calls(op string) int { return h.group.Calls(op) }

// Join returns local rank's Collective (0 ≤ rank < local), which moves
// data through b; closing the last local rank's closes the hub.
func (h *Hub) Join(rank int, b kernels.Backend) (kernels.Collective, error) {
	if rank >= h.local {
		return nil, fmt.Errorf("netcoll: rank %d is not one of rank 0's %d devices", rank, h.local)
	}
	c, err := h.group.Join(rank, b)
	if err != nil {
		return nil, err
	}
	return &localMember{Collective: c, h: h}, nil
}

// localMember is a hub-side device's collective: inproc's, with Close
// closing the hub after the last.
type localMember struct {
	kernels.Collective
	h    *Hub
	once sync.Once
}

func (m *localMember) Close() error {
	m.once.Do(func() {
		m.h.mu.Lock()
		m.h.open--
		last := m.h.open == 0
		m.h.mu.Unlock()
		if last {
			m.h.Close()
		}
	})
	return nil
}

// Close stops the hub: the listener and every rank's connection close,
// and any call still waiting fails.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closing = true
	conns := h.conns
	h.mu.Unlock()
	h.ln.Close()
	for _, c := range conns {
		c.c.Close()
	}
	h.group.Abort(errors.New("netcoll: the hub was closed"))
}

func (h *Hub) accept() {
	for {
		c, err := h.ln.Accept()
		if err != nil {
			return // closed
		}
		go h.admit(newConn(c))
	}
}

// admit reads a connection's hello and, for a rank the job expects,
// joins the group on its behalf.
func (h *Hub) admit(c *conn) {
	var hi hello
	if err := c.recv(&hi, h.timeout); err != nil || hi.Key != h.id.Key {
		c.c.Close() // a stray connection: not a rank of this job
		return
	}
	refuse := func(err error) {
		c.send(helloReply{Err: err.Error()}, time.Second)
		c.c.Close()
		h.group.Abort(err)
	}
	h.mu.Lock()
	var bad error
	switch {
	case hi.Size != h.size:
		bad = fmt.Errorf("netcoll: rank %d counts %d devices in the job, rank 0 counts %d: give every node the same --devices", hi.Rank, hi.Size, h.size)
	case hi.Rank < h.local || hi.Rank >= h.size:
		bad = fmt.Errorf("netcoll: a process says it drives rank %d of %d, which is not another node's (rank 0 drives 0 to %d)", hi.Rank, h.size, h.local-1)
	case h.joined[hi.Rank]:
		bad = fmt.Errorf("netcoll: two processes say they drive rank %d: each node needs its own RANK / SLURM_PROCID", hi.Rank)
	case h.closing:
		bad = errors.New("netcoll: the hub is closed")
	}
	if bad == nil {
		h.joined[hi.Rank] = true
		h.conns = append(h.conns, c)
	}
	h.mu.Unlock()
	if bad != nil {
		refuse(bad)
		return
	}
	be := cpu.New() // the proxy's host buffers
	m, err := h.group.Join(hi.Rank, be)
	if err != nil {
		refuse(err)
		return
	}
	if err := c.send(helloReply{}, h.timeout); err != nil {
		h.lost(hi.Rank, c, err)
		return
	}
	h.proxy(hi.Rank, c, m, be)
}

// proxy makes rank's calls in the group as they arrive on c, and writes
// back each result, until the rank says goodbye or its connection fails.
// It reads on while a call waits in the group, so that the rank's Abort
// (or its death) ends the call at once rather than after it.
func (h *Hub) proxy(rank int, c *conn, m kernels.Collective, be kernels.Backend) {
	calls := make(chan request, 16)
	go func() {
		for q := range calls {
			if err := c.send(serve(m, be, q), h.timeout); err != nil {
				h.lost(rank, c, err)
				return
			}
		}
	}()
	defer close(calls)
	for {
		var q request
		if err := c.recv(&q, 0); err != nil {
			h.lost(rank, c, err)
			return
		}
		switch q.Op {
		case "bye":
			c.c.Close()
			return
		case "abort":
			m.Abort(errors.New(q.Reason))
		default:
			calls <- q
		}
	}
}

// lost aborts the group naming a rank whose connection failed, unless
// the hub is closing.
func (h *Hub) lost(rank int, c *conn, err error) {
	h.mu.Lock()
	closing := h.closing
	h.mu.Unlock()
	c.c.Close()
	if closing {
		return
	}
	h.group.Abort(fmt.Errorf("netcoll: rank %d of %d (%s) is gone: its connection closed without a goodbye (its process exited or its node stopped answering: %v)",
		rank, h.size, c.c.RemoteAddr(), err))
}

// serve makes one call of a remote rank through its proxy member m.
func serve(m kernels.Collective, be kernels.Backend, q request) reply {
	var r reply
	var err error
	switch q.Op {
	case "all-reduce":
		buf := be.Alloc(kernels.F32, len(q.Values))
		defer be.Free(buf)
		be.Upload(buf, q.Values)
		if err = m.AllReduceSum(buf); err == nil {
			r.Values = make([]float32, len(q.Values))
			be.Download(r.Values, buf)
		}
	case "all-to-all":
		if err = kernels.CheckAllToAllDTypes(q.DType, q.DType); err != nil {
			err = fmt.Errorf("netcoll: rank %d: %w", m.Rank(), err)
			m.Abort(err)
			break
		}
		send, recv := be.Alloc(q.DType, len(q.Values)), be.Alloc(q.DType, q.RecvLen)
		defer be.Free(send)
		defer be.Free(recv)
		be.Upload(send, q.Values)
		if err = m.AllToAll(send, q.SendRows, recv, q.RecvRows, q.Width); err == nil {
			n := 0
			for _, rows := range q.RecvRows {
				n += rows * q.Width
			}
			r.Values = make([]float32, q.RecvLen)
			be.Download(r.Values, recv)
			r.Values = r.Values[:n]
		}
	case "counts":
		r.Counts, err = m.ExchangeCounts(q.Counts)
	case "barrier":
		err = m.Barrier()
	default:
		err = fmt.Errorf("netcoll: rank %d sent an unknown call %q (another grpo build?)", m.Rank(), q.Op)
		m.Abort(err)
	}
	if err == nil {
		err = be.Sync()
	}
	if err != nil {
		r.Err = err.Error()
	}
	return r
}
