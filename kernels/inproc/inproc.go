// Package inproc is kernels.Collective for backends of one process — cpu
// replicas, emu devices — exchanging through host memory with NCCL's
// semantics, so multi-device training runs whole in go test and on any
// machine. Every rank must make the same calls with the same counts; a
// sum adds the ranks' values in rank order (0, 1, 2, …), so every rank
// gets the same bits; an all-to-all copies each rank's rows to the ranks
// they are addressed to, once every rank's counts agree; a rank that does
// not arrive within the timeout, or a mismatched call, aborts the group
// and every rank's call returns an error instead of waiting for ever.
package inproc

import (
	"fmt"
	"sync"
	"time"

	"github.com/grpo-dev/grpo/kernels"
)

// Group is the shared state of size ranks; Join hands out each rank's
// kernels.Collective.
type Group struct {
	size    int
	timeout time.Duration

	mu      sync.Mutex
	current *round // the call the ranks are gathering for; nil between calls
	seq     int    // calls completed
	err     error  // set once the group is aborted
	joined  []bool
	calls   map[string]int
}

// round is one collective call on its way: each rank's contribution until
// the last arrives, then the result every rank copies out (a sum), or
// the contributions each rank picks its own part from (an all-to-all).
type round struct {
	seq     int
	op      string
	n       int // what every rank must agree on: elements, a row width, counts
	first   int // the rank that opened the round, for mismatch messages
	arrived []bool
	parts   []part
	count   int
	result  []float32
	err     error
	done    chan struct{}
	timer   *time.Timer
}

// part is one rank's contribution to a call.
type part struct {
	values             []float32     // all-reduce: its buffer; all-to-all: its send rows
	sendRows, recvRows []int         // all-to-all
	dt                 kernels.DType // all-to-all: its buffers' dtype
	counts             []int         // count exchange
}

// NewGroup makes a group of size ranks; a call waits at most timeout for
// the last rank to arrive.
func NewGroup(size int, timeout time.Duration) (*Group, error) {
	if size < 1 {
		return nil, fmt.Errorf("inproc: a group of %d ranks: want at least 1", size)
	}
	if timeout <= 0 {
		return nil, fmt.Errorf("inproc: timeout %v: want a positive wait for a missing rank", timeout)
	}
	return &Group{size: size, timeout: timeout, joined: make([]bool, size), calls: map[string]int{}}, nil
}

// Join returns rank's Collective, which moves data through backend b.
func (g *Group) Join(rank int, b kernels.Backend) (kernels.Collective, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if rank < 0 || rank >= g.size {
		return nil, fmt.Errorf("inproc: rank %d of a group of %d", rank, g.size)
	}
	if g.joined[rank] {
		return nil, fmt.Errorf("inproc: rank %d joined twice", rank)
	}
	g.joined[rank] = true
	return &member{g: g, rank: rank, b: b}, nil
}

// Calls returns how many completed calls of op ("all-reduce", "barrier",
// "all-to-all", "counts") the group has made (each counted once, not once
// per rank), so tests can count a step's collectives as they count
// launches.
func (g *Group) Calls(op string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls[op]
}

// Abort ends the group: waiting calls return reason, and so do later ones.
func (g *Group) Abort(reason error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.abortLocked(reason)
}

func (g *Group) abortLocked(reason error) {
	if g.err != nil {
		return
	}
	g.err = fmt.Errorf("%w: %w", kernels.ErrCollectiveAborted, reason)
	if r := g.current; r != nil {
		r.finish(nil, g.err)
		g.current = nil
	}
}

// exchange is one rank's part of a call of op over n elements (or a row
// width, or counts): it contributes p and waits for every rank's; the
// finished round holds the sum (all-reduce) and every rank's part.
func (g *Group) exchange(rank int, op string, n int, p part) (*round, error) {
	g.mu.Lock()
	if g.err != nil {
		err := g.err
		g.mu.Unlock()
		return nil, err
	}
	r := g.current
	if r == nil {
		r = &round{seq: g.seq + 1, op: op, n: n, first: rank, arrived: make([]bool, g.size),
			parts: make([]part, g.size), done: make(chan struct{})}
		seq := r.seq
		r.timer = time.AfterFunc(g.timeout, func() { g.expire(seq) })
		g.current = r
	}
	if r.op != op || r.n != n {
		g.abortLocked(fmt.Errorf("inproc: call #%d: rank %d called %s of %d elements but rank %d called %s of %d; every rank must make the same calls with the same counts",
			r.seq, rank, op, n, r.first, r.op, r.n))
		err := g.err
		g.mu.Unlock()
		return nil, err
	}
	r.arrived[rank] = true
	r.parts[rank] = p
	r.count++
	if r.count == g.size {
		if err := r.check(); err != nil {
			g.abortLocked(err) // finishes r, still current, with the error
		} else {
			g.current = nil
			g.seq++
			g.calls[op]++
			var sum []float32
			if op == "all-reduce" {
				sum = sumInRankOrder(r.parts, r.n)
			}
			r.finish(sum, nil)
		}
	}
	g.mu.Unlock()
	<-r.done
	return r, r.err
}

// check is what a call's ranks must agree on beyond the op and count,
// seen once all have arrived: in an all-to-all, the rows each rank sends
// each other are the rows that one expects.
func (r *round) check() error {
	if r.op != "all-to-all" {
		return nil
	}
	for from, p := range r.parts {
		// On a GPU the rows move as stored bytes (NCCL's send/recv), so
		// ranks that disagree on the dtype would cut each other's rows
		// wrong.
		if p.dt != r.parts[0].dt {
			return fmt.Errorf("inproc: all-to-all #%d: rank %d moves %v rows but rank 0 %v; every rank's rows are of one dtype", r.seq, from, p.dt, r.parts[0].dt)
		}
		for to, rows := range p.sendRows {
			if want := r.parts[to].recvRows[from]; rows != want {
				return fmt.Errorf("inproc: all-to-all #%d: rank %d sends %d rows to rank %d, which expects %d from it; exchange the counts first (ExchangeCounts)",
					r.seq, from, rows, to, want)
			}
		}
	}
	return nil
}

// expire aborts call seq if some rank has still not arrived.
func (g *Group) expire(seq int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.current
	if r == nil || r.seq != seq {
		return
	}
	var missing []int
	for i, ok := range r.arrived {
		if !ok {
			missing = append(missing, i)
		}
	}
	g.abortLocked(fmt.Errorf("inproc: %s #%d: rank(s) %v of %d did not arrive within %v", r.op, r.seq, missing, g.size, g.timeout))
}

func (r *round) finish(result []float32, err error) {
	r.timer.Stop()
	r.result, r.err = result, err
	close(r.done)
}

// sumInRankOrder adds the ranks' values elementwise, rank 0 first, in
// float32 as the device would: the order is fixed, so the bits are too.
func sumInRankOrder(parts []part, n int) []float32 {
	out := make([]float32, n)
	for _, p := range parts {
		for i, v := range p.values {
			out[i] += v
		}
	}
	return out
}
