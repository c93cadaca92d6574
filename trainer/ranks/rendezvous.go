package ranks

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// IDBytes is the size of the id rank 0 hands out: an ncclUniqueId.
const IDBytes = 128

// protocolVersion is the rendezvous's wire version; ranks of another
// version (another grpo build) are refused by name rather than misread.
const protocolVersion = 1

// magic opens every hello, so a stray connection (a port scanner, a
// torchrun store client on the same port) is refused, not parsed.
var magic = [8]byte{'g', 'r', 'p', 'o', 'r', 'd', 'v', 'z'}

// hello is what each rank sends rank 0: magic, version, rank, world size.
type hello struct {
	Magic       [8]byte
	Version     uint32
	Rank, World uint32
}

// Reply statuses.
const (
	replyID    = 0 // the id follows
	replyError = 1 // a uint16-length message follows
)

// Rendezvous brings every rank of r's job together and returns the id
// rank 0 made with newID (ncclGetUniqueId's bytes in a GPU run): rank 0
// listens on r.Addr, the others connect (retrying while rank 0 is not up
// yet) and say who they are; once all WorldSize-1 have arrived, rank 0
// sends each the id. So a communicator is formed only by ranks that were
// all alive a moment before. Nothing waits longer than timeout: a rank
// that never arrives, a world size or version that does not match, or a
// rank number given twice ends every waiting rank with a message naming
// it. A single-rank job returns newID's id at once. Meet does the same and
// keeps the connections to watch the ranks.
func Rendezvous(ctx context.Context, r Rank, newID func() ([IDBytes]byte, error), timeout time.Duration) ([IDBytes]byte, error) {
	j, err := Meet(ctx, r, newID, timeout)
	if err != nil {
		return [IDBytes]byte{}, err
	}
	j.Close()
	return j.ID, nil
}

// Meet is Rendezvous that keeps the job's connections (rank 0 to every
// other rank) open, so a rank whose process dies is known by name: see
// Job.Lost.
func Meet(ctx context.Context, r Rank, newID func() ([IDBytes]byte, error), timeout time.Duration) (*Job, error) {
	wait := timeout
	if r.Rank != 0 {
		// A little longer than rank 0 waits, so rank 0's verdict — which
		// names the missing rank — arrives before this rank gives up.
		wait += time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if r.WorldSize == 1 {
		id, err := newID()
		if err != nil {
			return nil, err
		}
		return watch(r, id, nil), nil
	}
	if r.Rank == 0 {
		id, peers, err := serve(ctx, r, newID, timeout)
		if err != nil {
			return nil, err
		}
		return watch(r, id, peers), nil
	}
	id, c, err := join(ctx, r, timeout)
	if err != nil {
		return nil, err
	}
	return watch(r, id, map[int]net.Conn{0: c}), nil
}

// keepAlive makes the kernel notice a peer whose node stopped answering
// (no FIN: a power loss, a partition) within about 20 s.
var keepAlive = net.KeepAliveConfig{Enable: true, Idle: 5 * time.Second, Interval: 5 * time.Second, Count: 3}

// serve is rank 0's side.
func serve(ctx context.Context, r Rank, newID func() ([IDBytes]byte, error), timeout time.Duration) ([IDBytes]byte, map[int]net.Conn, error) {
	var id [IDBytes]byte
	_, port, err := net.SplitHostPort(r.Addr)
	if err != nil {
		return id, nil, fmt.Errorf("ranks: rendezvous address %q: %w", r.Addr, err)
	}
	// Listen on every interface: MASTER_ADDR is how the others reach this
	// node, which need not be an address it can bind (a NAT, a service).
	ln, err := (&net.ListenConfig{KeepAliveConfig: keepAlive}).Listen(ctx, "tcp", net.JoinHostPort("", port))
	if err != nil {
		return id, nil, fmt.Errorf("ranks: rank 0 cannot listen on port %s for the rendezvous: %w (MASTER_PORT in use?)", port, err)
	}
	defer ln.Close()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()

	peers := map[int]net.Conn{}
	// failAll tells every rank that arrived why the rendezvous failed.
	failAll := func(err error) ([IDBytes]byte, map[int]net.Conn, error) {
		for _, c := range peers {
			writeError(c, err.Error())
			c.Close()
		}
		return id, nil, err
	}
	for len(peers) < r.WorldSize-1 {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return failAll(fmt.Errorf("ranks: rank(s) %v of %d did not reach rank 0 at %s within %v", absent(peers, r.WorldSize), r.WorldSize, r.Addr, timeout))
			}
			return failAll(fmt.Errorf("ranks: rank 0 accepting on %s: %w", r.Addr, err))
		}
		h, err := readHello(ctx, c)
		if err != nil {
			// A stray or broken connection: drop it and go on waiting.
			writeError(c, err.Error())
			c.Close()
			continue
		}
		var bad error
		switch {
		case h.Version != protocolVersion:
			bad = fmt.Errorf("ranks: rank %d speaks rendezvous version %d, rank 0 version %d: run the same grpo build on every node", h.Rank, h.Version, protocolVersion)
		case int(h.World) != r.WorldSize:
			bad = fmt.Errorf("ranks: rank %d has world size %d, rank 0 has %d: every node must be launched with the same WORLD_SIZE / SLURM_NTASKS", h.Rank, h.World, r.WorldSize)
		case h.Rank == 0 || int(h.Rank) >= r.WorldSize:
			bad = fmt.Errorf("ranks: a process says it is rank %d of %d, which rank 0 cannot take: each node needs its own rank, 1 to %d", h.Rank, r.WorldSize, r.WorldSize-1)
		case peers[int(h.Rank)] != nil:
			bad = fmt.Errorf("ranks: two processes say they are rank %d: each node needs its own RANK / SLURM_PROCID", h.Rank)
		}
		if bad != nil {
			writeError(c, bad.Error())
			c.Close()
			return failAll(bad)
		}
		peers[int(h.Rank)] = c
	}
	if id, err = newID(); err != nil {
		return failAll(fmt.Errorf("ranks: rank 0 making the communicator id: %w", err))
	}
	for rank, c := range peers {
		c.SetWriteDeadline(time.Now().Add(timeout))
		if _, err := c.Write(append([]byte{replyID}, id[:]...)); err != nil {
			return failAll(fmt.Errorf("ranks: sending rank %d the id: %w", rank, err))
		}
		c.SetDeadline(time.Time{})
	}
	return id, peers, nil
}

// join is the side of every rank but 0.
func join(ctx context.Context, r Rank, timeout time.Duration) (id [IDBytes]byte, conn net.Conn, err error) {
	var c net.Conn
	var lastErr error
	for c == nil {
		var err error
		c, err = (&net.Dialer{Timeout: time.Second, KeepAliveConfig: keepAlive}).DialContext(ctx, "tcp", r.Addr)
		if err == nil {
			break
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return id, nil, fmt.Errorf("ranks: rank %d could not reach rank 0 at %s within %v: %v", r.Rank, r.Addr, timeout, lastErr)
		case <-time.After(100 * time.Millisecond): // rank 0 may not be listening yet
		}
	}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	h := hello{Magic: magic, Version: protocolVersion, Rank: uint32(r.Rank), World: uint32(r.WorldSize)}
	if err := binary.Write(c, binary.BigEndian, h); err != nil {
		return id, nil, fmt.Errorf("ranks: rank %d saying hello to rank 0 at %s: %w", r.Rank, r.Addr, err)
	}
	br := bufio.NewReader(c)
	status, err := br.ReadByte()
	if err != nil {
		if ctx.Err() != nil {
			return id, nil, fmt.Errorf("ranks: rank %d: rank 0 at %s sent no id within %v (other ranks missing?)", r.Rank, r.Addr, timeout)
		}
		return id, nil, fmt.Errorf("ranks: rank %d: rank 0 at %s closed the rendezvous: %w", r.Rank, r.Addr, err)
	}
	switch status {
	case replyID:
		if _, err := io.ReadFull(br, id[:]); err != nil {
			return id, nil, fmt.Errorf("ranks: rank %d reading the id from rank 0: %w", r.Rank, err)
		}
		if !stop() {
			return id, nil, fmt.Errorf("ranks: rank %d: the rendezvous timed out as the id arrived", r.Rank)
		}
		c.SetDeadline(time.Time{})
		return id, bufConn{c, br}, nil
	case replyError:
		msg, err := readMessage(br)
		if err != nil {
			return id, nil, fmt.Errorf("ranks: rank %d: rank 0 refused the rendezvous (its reason unreadable: %w)", r.Rank, err)
		}
		return id, nil, fmt.Errorf("ranks: rank 0 ended the rendezvous: %s", strings.TrimPrefix(msg, "ranks: "))
	}
	return id, nil, fmt.Errorf("ranks: rank %d: rank 0 at %s answered with status %d: not a grpo rendezvous", r.Rank, r.Addr, status)
}

func readHello(ctx context.Context, c net.Conn) (hello, error) {
	var h hello
	deadline, _ := ctx.Deadline()
	c.SetReadDeadline(deadline)
	if err := binary.Read(c, binary.BigEndian, &h); err != nil {
		return h, fmt.Errorf("ranks: reading a rank's hello: %w", err)
	}
	c.SetReadDeadline(time.Time{})
	if h.Magic != magic {
		return h, errors.New("ranks: not a grpo rendezvous hello")
	}
	return h, nil
}

func writeError(c net.Conn, msg string) {
	if len(msg) > 0xffff {
		msg = msg[:0xffff]
	}
	b := []byte{replyError, byte(len(msg) >> 8), byte(len(msg))}
	c.SetWriteDeadline(time.Now().Add(time.Second))
	c.Write(append(b, msg...)) // best effort: the peer may be gone
}

func readMessage(r io.Reader) (string, error) {
	var n [2]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return "", err
	}
	msg := make([]byte, int(n[0])<<8|int(n[1]))
	_, err := io.ReadFull(r, msg)
	return string(msg), err
}

// absent lists the ranks 1..world-1 not in peers, in order.
func absent(peers map[int]net.Conn, world int) []int {
	var out []int
	for i := 1; i < world; i++ {
		if peers[i] == nil {
			out = append(out, i)
		}
	}
	return out
}

// bufConn reads through the reader that read the id, which may hold what
// rank 0 sent next.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c bufConn) Read(b []byte) (int, error) { return c.r.Read(b) }
