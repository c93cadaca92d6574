package cuda

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// A kernel profile says where the GPU time of a stretch of work went,
// kernel by kernel, without nsys. While one is open (StartProfile) the
// Counter brackets every op it passes to the device — kernel launches,
// cuBLAS GEMMs, memsets, copies, graph launches — between two timing
// events on the stream; the host waits for none of them until
// StopProfile, which waits for the last and reads the elapsed times back
// (and, every harvestEvery ops, the ones already done, without waiting,
// so the events in flight stay as few as the GPU is behind). The events
// come from the wrapped device, not through the Counter: a profile
// changes no Counts. Closed, the default, the Counter holds no profiler:
// no event, no allocation, one nil check per op.
//
// Inside a graph capture nothing runs, so nothing is timed (the ops are
// counted as Untimed); a replay is timed as one op, "graph (N kernels)".
// To see a captured step's kernels, run it op by op (model.Decoder's
// Eager), which adds the launch gaps the graph removes.

// KernelTime is one entry of a profile: a kernel by name, a GEMM by
// shape ("gemm bf16 NT m×n×k", cuBLAS's column-major terms), a memset, a
// copy by direction, or a graph.
type KernelTime struct {
	Name     string  `json:"name"`
	Launches int64   `json:"launches"`
	Ms       float64 `json:"ms"`
}

// Profile is where the GPU time of the work between StartProfile and
// StopProfile went.
type Profile struct {
	// Kernels are the entries, the largest total time first.
	Kernels []KernelTime `json:"kernels"`
	// KernelMs is their sum: the time the GPU spent running the ops.
	KernelMs float64 `json:"kernel_ms"`
	// SpanMs is the GPU clock from StartProfile to the end of the last
	// timed op; SpanMs − KernelMs is time the stream sat idle between
	// ops, waiting for the host to issue the next (launch gaps, host
	// work, host waits).
	SpanMs float64 `json:"span_ms"`
	// Untimed are the ops issued inside graph captures.
	Untimed int64 `json:"untimed,omitempty"`
}

// Launches is the number of timed ops.
func (p Profile) Launches() int64 {
	var n int64
	for _, k := range p.Kernels {
		n += k.Launches
	}
	return n
}

// harvestEvery is how many ops are timed between reads of the finished
// ones (each read is one EventDone per finished op, no wait).
const harvestEvery = 1024

type profiler struct {
	dev     Device // the Counter's wrapped device
	mark    Event  // recorded at StartProfile: the span's start
	last    Event  // the end event of the last timed op, 0 before one
	free    []Event
	open    []timedOp // timed, not yet read back, in stream order
	totals  map[string]*KernelTime
	untimed int64
	err     error // the first event call that failed: timing stops
}

type timedOp struct {
	name       string
	start, end Event
}

// event is a timing event from the pool or a new one.
func (p *profiler) event() Event {
	if n := len(p.free); n > 0 {
		e := p.free[n-1]
		p.free = p.free[:n-1]
		return e
	}
	e, err := p.dev.NewTimingEvent()
	p.fail(err)
	return e
}

func (p *profiler) fail(err error) {
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("kernel profile: %w", err)
	}
}

// time runs op between two recorded events, or only runs it inside a
// capture or after an event call failed (the failure is StopProfile's).
func (p *profiler) time(capturing bool, name string, op func() error) error {
	if capturing || p.err != nil {
		if capturing {
			p.untimed++
		}
		return op()
	}
	s, e := p.event(), p.event()
	if p.err != nil {
		for _, x := range [2]Event{s, e} {
			if x != 0 {
				p.free = append(p.free, x)
			}
		}
		return op()
	}
	// A queued call returns its batch's errors (owner.go), which may be
	// earlier ops': the records' errors go to the caller as well.
	rs := p.dev.Record(s)
	err := op()
	re := p.dev.Record(e)
	p.fail(errors.Join(rs, re))
	err = errors.Join(rs, err, re)
	p.open = append(p.open, timedOp{name, s, e})
	p.last = e
	if len(p.open)%harvestEvery == 0 && p.err == nil {
		// The queries hand over the batch too: an error is the caller's.
		if p.harvest(false); p.err != nil {
			err = errors.Join(err, p.err)
		}
	}
	return err
}

// harvest adds finished ops' times to the totals and puts their events
// back in the pool: every op once the caller has waited for the last
// (all), else those the device reports done, but never the last op,
// whose end event is the span's end.
func (p *profiler) harvest(all bool) {
	n := 0
	for i, op := range p.open {
		if p.err != nil || (!all && i == len(p.open)-1) {
			break
		}
		if !all {
			done, err := p.dev.EventDone(op.end)
			if p.fail(err); !done || err != nil {
				break
			}
		}
		ms, err := p.dev.Elapsed(op.start, op.end)
		if err != nil {
			p.fail(fmt.Errorf("%s: %w", op.name, err))
			break
		}
		k := p.totals[op.name]
		if k == nil {
			k = &KernelTime{Name: op.name}
			p.totals[op.name] = k
		}
		k.Launches++
		k.Ms += ms
		p.free = append(p.free, op.start, op.end)
		n++
	}
	p.open = p.open[n:]
}

// StartProfile opens a kernel profile (above) of the work issued from
// now until StopProfile.
func (b *Backend) StartProfile() error {
	if b.dev.prof != nil {
		return fmt.Errorf("%s: StartProfile while a profile is open", b.Name())
	}
	if b.capturing != nil {
		return fmt.Errorf("%s: StartProfile while capturing a graph", b.Name())
	}
	p := &profiler{dev: b.dev.Device, totals: map[string]*KernelTime{}}
	p.mark = p.event()
	if p.err == nil {
		p.fail(p.dev.Record(p.mark))
	}
	if p.err != nil {
		return errors.Join(p.err, p.release())
	}
	b.dev.prof = p
	return nil
}

// StopProfile waits for the profiled work, closes the profile and
// returns it.
func (b *Backend) StopProfile() (Profile, error) {
	p := b.dev.prof
	if p == nil {
		return Profile{}, fmt.Errorf("%s: StopProfile without StartProfile", b.Name())
	}
	b.dev.prof = nil
	out := Profile{Untimed: p.untimed}
	if p.last != 0 && p.err == nil {
		p.fail(p.dev.WaitEvent(p.last))
		if p.err == nil {
			ms, err := p.dev.Elapsed(p.mark, p.last)
			p.fail(err)
			out.SpanMs = ms
		}
	}
	p.harvest(true)
	for _, k := range p.totals {
		out.Kernels = append(out.Kernels, *k)
	}
	slices.SortFunc(out.Kernels, func(a, b KernelTime) int {
		return cmp.Or(cmp.Compare(b.Ms, a.Ms), cmp.Compare(a.Name, b.Name))
	})
	for _, k := range out.Kernels { // in this order, so the sum is reproducible
		out.KernelMs += k.Ms
	}
	err := errors.Join(p.err, p.release())
	if err != nil {
		return Profile{}, err
	}
	return out, nil
}

// release destroys the profile's events.
func (p *profiler) release() error {
	var errs []error
	for _, e := range p.free {
		errs = append(errs, p.dev.DestroyEvent(e))
	}
	for _, op := range p.open {
		errs = append(errs, p.dev.DestroyEvent(op.start), p.dev.DestroyEvent(op.end))
	}
	if p.mark != 0 {
		errs = append(errs, p.dev.DestroyEvent(p.mark))
	}
	p.free, p.open = nil, nil
	return errors.Join(errs...)
}

// gemmName is a GEMM's profile entry: its kind, the operands' transposes
// and its column-major m×n×k, as cuBLAS is called.
func gemmName(kind string, transA, transB bool, m, n, k int) string {
	t := func(x bool) byte {
		if x {
			return 'T'
		}
		return 'N'
	}
	return fmt.Sprintf("%s %c%c %dx%dx%d", kind, t(transA), t(transB), m, n, k)
}
