package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Pool keeps interpreters warm: each is started (bwrap, python, preloads)
// before anyone asks for it, so a call costs a round trip, not a start.
// Every interpreter serves one episode: Release kills it and a fresh one is
// already warming up in its place, so no state crosses episodes.
type Pool struct {
	l     launcher
	ready chan started

	mu     sync.Mutex
	closed bool
	done   chan struct{} // closed by Close
	live   map[*repl]struct{}
	wg     sync.WaitGroup // warm-ups and live interpreters
}

type started struct {
	r   *repl
	err error
}

// NewPool checks that sandboxes can run here (an error wrapping
// ErrUnavailable says why not and how to fix it) and starts size
// interpreters in the background.
func NewPool(cfg Config, size int) (*Pool, error) {
	if size < 1 {
		return nil, fmt.Errorf("sandbox: pool size %d, want ≥ 1", size)
	}
	l, err := newLauncher(cfg)
	if err != nil {
		return nil, err
	}
	if err := l.check(); err != nil {
		return nil, err
	}
	p := &Pool{l: l, ready: make(chan started, size), done: make(chan struct{}), live: map[*repl]struct{}{}}
	for i := 0; i < size; i++ {
		p.warm()
	}
	return p, nil
}

// Isolation says which isolation the pool's sandboxes get, for a log line.
func (p *Pool) Isolation() string { return p.l.describe() }

// warm starts one interpreter in the background. The channel has room for
// every warm-up in flight (one per slot), so a warm-up never blocks.
func (p *Pool) warm() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		r, err := startREPL(p.l)
		if err == nil && !p.track(r) {
			r.kill()
			<-r.done
			err = errClosed
		}
		p.ready <- started{r, err}
	}()
}

var errClosed = errors.New("sandbox: pool closed")

// track registers a live interpreter so Close can end it; false once closed.
func (p *Pool) track(r *repl) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.live[r] = struct{}{}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		<-r.done
		p.mu.Lock()
		delete(p.live, r)
		p.mu.Unlock()
	}()
	return true
}

// take hands out a warm interpreter and starts its replacement.
func (p *Pool) take(ctx context.Context) (*repl, error) {
	select {
	case s := <-p.ready:
		p.warm()
		return s.r, s.err
	case <-p.done:
		return nil, errClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Acquire returns an interpreter for one episode.
func (p *Pool) Acquire(ctx context.Context) (*Interpreter, error) {
	r, err := p.take(ctx)
	if err != nil {
		return nil, err
	}
	return &Interpreter{pool: p, r: r}, nil
}

// Release ends the episode's interpreter. It returns at once; the process
// is killed and reaped in the background.
func (p *Pool) Release(it *Interpreter) { it.close() }

// Close kills every interpreter, warm or in use, and waits until all have
// exited, so nothing the pool started outlives it.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	for r := range p.live {
		r.kill()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

// Interpreter is one episode's Python: state persists from call to call.
// Its methods are safe for concurrent use; calls run one at a time, and
// Release from another goroutine stops a running call at once.
type Interpreter struct {
	pool *Pool
	run  sync.Mutex // one cell at a time

	mu     sync.Mutex // guards r and closed, held only briefly
	r      *repl      // nil after its process died, until the next Run
	lost   string     // how the last interpreter ended, while r is nil
	closed bool
}

var errReleased = errors.New("sandbox: interpreter already released")

// Run executes code as the next cell. Whatever the code does — raise, time
// out, exhaust a limit, kill its interpreter — is reported in the Result,
// and the episode can go on: after a cell that stopped the interpreter, the
// next Run gets a fresh one and sets Result.Restarted. The error is non-nil
// only when no cell could run: ctx ended, the interpreter was released, or a
// fresh interpreter could not start.
func (it *Interpreter) Run(ctx context.Context, code string) (Result, error) {
	it.run.Lock()
	defer it.run.Unlock()
	r, lost, err := it.current(ctx)
	if err != nil {
		return Result{}, err
	}
	res, err := r.run(ctx, code)
	res.Restarted, res.RestartReason = lost != "", lost
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.closed {
		return Result{}, errReleased
	}
	if err != nil {
		if it.r == r {
			it.r, it.lost = nil, r.ended()
		}
		if !errors.Is(err, errStopped) {
			return Result{}, err
		}
	}
	return res, nil
}

// current returns the live interpreter, taking a fresh one from the pool
// when the last one died; lost then says how that one ended.
func (it *Interpreter) current(ctx context.Context) (r *repl, lost string, err error) {
	it.mu.Lock()
	if it.closed {
		it.mu.Unlock()
		return nil, "", errReleased
	}
	if it.r != nil && !it.r.dead() {
		defer it.mu.Unlock()
		return it.r, "", nil
	}
	if it.r != nil { // died between calls (CPU limit, a thread's os._exit)
		it.r.kill()
		it.lost, it.r = it.r.ended(), nil
	}
	lost = it.lost
	it.mu.Unlock()
	// Waiting for a warm interpreter must not hold mu: Release has to be
	// able to end the episode meanwhile.
	r, err = it.pool.take(ctx)
	if err != nil {
		return nil, "", err
	}
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.closed {
		r.kill()
		return nil, "", errReleased
	}
	it.r, it.lost = r, ""
	return r, lost, nil
}

func (it *Interpreter) close() {
	it.mu.Lock()
	defer it.mu.Unlock()
	it.closed = true
	if it.r != nil {
		it.r.kill()
		it.r = nil
	}
}
