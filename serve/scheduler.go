package serve

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/sampler"
)

// Engine is what the HTTP layer needs from the generation side: take a
// job, run a function between steps (adapter loading), report counts. The
// scheduler over a sampler is the one implementation; a paged-KV engine
// can replace it behind this interface.
type Engine interface {
	submit(j *job) error
	do(ctx context.Context, f func(m *model.Model) error) error
	Stats() Stats
	Slots() int
	MaxLen() int
}

// Stats count the scheduler's requests.
type Stats struct {
	Running, Waiting int
	// Finished counts requests that generated to the end; Cancelled those
	// whose client went away (their slots were freed early); Failed the
	// rest.
	Finished, Cancelled, Failed int
	// Steps counts decode steps; GeneratedTokens the tokens sampled.
	Steps, GeneratedTokens int64
}

var (
	errQueueFull = errors.New("the server is at capacity: every slot is busy and the queue is full; retry later")
	errClosed    = errors.New("the server is shutting down")
)

// Scheduler batches jobs continuously over one sampler (see the package
// doc). Run drives it; the other methods may be called from any goroutine.
type Scheduler struct {
	s        *sampler.Sampler
	maxQueue int

	mu     sync.Mutex
	queue  []*job
	ctrl   []*control
	stats  Stats
	closed bool
	wake   chan struct{}

	// afterStepHook, when set (tests only), runs on the Run goroutine
	// after each step with the jobs still running, so a test can hold the
	// scheduler at a known point instead of racing it.
	afterStepHook func(running []*job)

	// owned by the Run goroutine
	current *adapterRef
	active  []*running
	seqs    []*sampler.Seq
}

type running struct {
	j    *job
	seqs []*sampler.Seq
	live int // sequences not yet done
}

type control struct {
	f    func(m *model.Model) error
	done chan error
}

// NewScheduler schedules over s; at most maxQueue jobs wait for slots.
func NewScheduler(s *sampler.Sampler, maxQueue int) *Scheduler {
	return &Scheduler{s: s, maxQueue: maxQueue, wake: make(chan struct{}, 1)}
}

// Slots is how many sequences run at once.
func (sc *Scheduler) Slots() int { return sc.s.Config().Slots }

// MaxLen is the most tokens one sequence may hold.
func (sc *Scheduler) MaxLen() int { return sc.s.Config().MaxLen }

// Stats returns the current counts.
func (sc *Scheduler) Stats() Stats {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	st := sc.stats
	st.Waiting = len(sc.queue)
	return st
}

func (sc *Scheduler) kick() {
	select {
	case sc.wake <- struct{}{}:
	default:
	}
}

func (sc *Scheduler) submit(j *job) error {
	if len(j.params) > sc.Slots() {
		return fmt.Errorf("n = %d exceeds the server's %d slots (grpo serve --slots)", len(j.params), sc.Slots())
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	switch {
	case sc.closed:
		return errClosed
	case len(sc.queue) >= sc.maxQueue:
		return errQueueFull
	}
	sc.queue = append(sc.queue, j)
	sc.kick()
	return nil
}

// do runs f on the scheduler goroutine between two steps, with the base
// model (no adapter); it waits for f unless ctx ends first.
func (sc *Scheduler) do(ctx context.Context, f func(m *model.Model) error) error {
	c := &control{f: f, done: make(chan error, 1)}
	sc.mu.Lock()
	if sc.closed {
		sc.mu.Unlock()
		return errClosed
	}
	sc.ctrl = append(sc.ctrl, c)
	sc.mu.Unlock()
	sc.kick()
	select {
	case err := <-c.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run is the scheduler loop; it returns when ctx ends (failing what is
// still queued or running) or a forward pass fails.
func (sc *Scheduler) Run(ctx context.Context) error {
	defer sc.shutdown()
	for {
		sc.runControls()
		sc.admit()
		if len(sc.active) == 0 {
			select {
			case <-sc.wake:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		sc.seqs = sc.seqs[:0]
		for _, r := range sc.active {
			sc.seqs = append(sc.seqs, r.seqs...)
		}
		if err := sc.s.Step(ctx, sc.seqs); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// A failed forward pass fails the requests in it; the server
			// goes on with the next ones.
			for _, r := range sc.active {
				sc.end(r, fmt.Errorf("generation failed: %w", err))
			}
			sc.active = sc.active[:0]
			continue
		}
		sc.afterStep()
		if sc.afterStepHook != nil {
			var js []*job
			for _, r := range sc.active {
				js = append(js, r.j)
			}
			sc.afterStepHook(js)
		}
	}
}

// afterStep publishes each running job's new tokens and retires jobs that
// finished or whose client went away.
func (sc *Scheduler) afterStep() {
	var sampled int64
	keep := sc.active[:0]
	for _, r := range sc.active {
		if err := r.j.ctx.Err(); err != nil {
			sc.end(r, err)
			continue
		}
		r.live = 0
		for i, q := range r.seqs {
			sampled += int64(len(q.Turn.Tokens) - len(r.j.outs[i].Tokens))
			r.j.publish(i, &q.Turn, q.Done())
			if !q.Done() {
				r.live++
			}
		}
		if r.live == 0 {
			sc.end(r, nil)
			continue
		}
		if r.j.stream {
			r.j.signal()
		}
		keep = append(keep, r)
	}
	sc.active = keep
	sc.mu.Lock()
	sc.stats.Steps++
	sc.stats.GeneratedTokens += sampled
	sc.mu.Unlock()
}

// end releases r's slots and finishes its job.
func (sc *Scheduler) end(r *running, err error) {
	for _, q := range r.seqs {
		sc.s.Release(q)
	}
	sc.mu.Lock()
	sc.stats.Running--
	switch {
	case err == nil:
		sc.stats.Finished++
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		sc.stats.Cancelled++
	default:
		sc.stats.Failed++
	}
	sc.mu.Unlock()
	r.j.adapter.release()
	r.j.finish(err)
}

// runControls runs queued control functions once no sequence is running
// (an adapter must not be freed or swapped under a running batch). While
// one waits, admit takes nothing new, so the batch drains.
func (sc *Scheduler) runControls() {
	if len(sc.active) > 0 {
		return
	}
	sc.mu.Lock()
	ctrl := sc.ctrl
	sc.ctrl = nil
	sc.mu.Unlock()
	if len(ctrl) == 0 {
		return
	}
	if err := sc.s.SetAdapter(nil); err != nil {
		for _, c := range ctrl {
			c.done <- err
		}
		return
	}
	sc.current = nil
	for _, c := range ctrl {
		c.done <- c.f(sc.s.Model())
	}
}

// admit moves jobs from the head of the queue into the sampler, in order,
// while they want the running batch's adapter (any adapter when nothing
// runs) and their choices fit its free slots and cache blocks (CanStart;
// a request's choices share its prompt's blocks).
func (sc *Scheduler) admit() {
	for {
		sc.mu.Lock()
		if len(sc.queue) == 0 || len(sc.ctrl) > 0 {
			sc.mu.Unlock()
			return
		}
		j := sc.queue[0]
		if j.ctx.Err() == nil {
			if len(sc.active) > 0 && j.adapter != sc.current || !sc.s.CanStart(len(j.prompt), len(j.params)) {
				sc.mu.Unlock()
				return
			}
		}
		sc.queue = sc.queue[1:]
		sc.stats.Running++
		sc.mu.Unlock()
		if err := j.ctx.Err(); err != nil {
			sc.end(&running{j: j}, err)
			continue
		}
		if r, err := sc.start(j); err != nil {
			sc.end(&running{j: j, seqs: r}, err)
		} else {
			sc.active = append(sc.active, &running{j: j, seqs: r, live: len(r)})
		}
	}
}

// start switches to j's adapter if needed, scores its prompt if asked and
// starts its sequences; on error it returns what it started, for release.
func (sc *Scheduler) start(j *job) ([]*sampler.Seq, error) {
	if j.adapter != sc.current {
		var ad model.Adapter
		if j.adapter != nil {
			ad = j.adapter.ad
		}
		if err := sc.s.SetAdapter(ad); err != nil {
			return nil, err
		}
		sc.current = j.adapter
	}
	if j.promptTop >= 0 {
		lps, tops, err := sampler.PromptLogprobs(sc.s.Model(), j.prompt, j.promptTop)
		if err != nil {
			return nil, err
		}
		j.mu.Lock()
		j.promptLP, j.promptTL = lps, tops
		j.mu.Unlock()
	}
	// The choices share the prompt: it is prefilled once (StartGroup).
	seqs, err := sc.s.StartGroup(j.prompt, j.params)
	if err != nil {
		return nil, err
	}
	for _, q := range seqs {
		if err := sc.s.Begin(q); err != nil {
			return seqs, err
		}
	}
	return seqs, nil
}

// shutdown fails what is queued or running and refuses new work.
func (sc *Scheduler) shutdown() {
	sc.mu.Lock()
	sc.closed = true
	queue, ctrl := sc.queue, sc.ctrl
	sc.queue, sc.ctrl = nil, nil
	sc.stats.Running += len(queue)
	sc.mu.Unlock()
	for _, r := range sc.active {
		sc.end(r, errClosed)
	}
	sc.active = nil
	for _, j := range queue {
		sc.end(&running{j: j}, errClosed)
	}
	for _, c := range ctrl {
		c.done <- errClosed
	}
}
