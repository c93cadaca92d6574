package ranks

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// After the id, the connections carry one-byte messages: bye (the sender
// is ending normally) and, from rank 0, lost (another rank is gone,
// followed by a uint16-length message naming it).
const (
	msgBye  = 'B'
	msgLost = 'L'
)

// Job is a rendezvous that stayed open: rank 0's connection to every other
// rank, kept after the id was handed out. A rank whose process dies
// closes its connection without a goodbye; rank 0 sees it, names the rank
// on its Lost channel and tells every other rank, which names it on theirs
// (a dead rank 0 is seen by every rank directly). The trainer aborts its
// collectives with that error, so the NCCL watchdog's "a peer failed" is
// joined by which one.
type Job struct {
	ID    [IDBytes]byte
	rank  Rank
	conns map[int]net.Conn // rank 0: every other rank; the others: rank 0

	mu      sync.Mutex // serialises writes
	lost    chan error
	report  sync.Once
	closing atomic.Bool
}

// watch starts a goroutine per connection that reports its peer's loss.
func watch(r Rank, id [IDBytes]byte, conns map[int]net.Conn) *Job {
	j := &Job{ID: id, rank: r, conns: conns, lost: make(chan error, 1)}
	for peer, c := range conns {
		go j.watchPeer(peer, c)
	}
	return j
}

// Lost delivers, once, the error naming the first rank found gone; it
// never fires in a job that ends normally.
func (j *Job) Lost() <-chan error { return j.lost }

// Close ends the job normally: every connection says goodbye and closes.
func (j *Job) Close() {
	j.closing.Store(true)
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, c := range j.conns {
		c.Write([]byte{msgBye}) // best effort: the peer may have ended first
		c.Close()
	}
}

func (j *Job) watchPeer(peer int, c net.Conn) {
	var b [1]byte
	_, err := io.ReadFull(c, b[:])
	if j.closing.Load() || (err == nil && b[0] == msgBye) {
		return
	}
	if err == nil && b[0] == msgLost && j.rank.Rank != 0 {
		msg, merr := readMessage(c)
		if merr == nil {
			j.fail(errors.New(msg))
			return
		}
		err = merr
	}
	why := "its process exited or its node stopped answering"
	if err == nil {
		why = fmt.Sprintf("it sent %q, not a grpo rank's message", b[0])
	}
	j.fail(fmt.Errorf("ranks: rank %d of %d (%s) is gone: %s", peer, j.rank.WorldSize, c.RemoteAddr(), why))
}

// fail reports err once; rank 0 first tells every other rank, so they
// hear it before its own process, acting on Lost, may exit.
func (j *Job) fail(err error) {
	j.report.Do(func() {
		if j.rank.Rank == 0 {
			msg := err.Error()
			if len(msg) > 0xffff {
				msg = msg[:0xffff]
			}
			j.mu.Lock()
			for _, c := range j.conns {
				c.SetWriteDeadline(time.Now().Add(time.Second)) // a hung peer does not hold up the rest
				c.Write(append([]byte{msgLost, byte(len(msg) >> 8), byte(len(msg))}, msg...))
			}
			j.mu.Unlock()
		}
		j.lost <- err
	})
}

// Abandon leaves the job without a goodbye, as a process that failed:
// every other rank's Lost names this one.
func (j *Job) Abandon() {
	j.closing.Store(true)
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, c := range j.conns {
		c.Close()
	}
}
