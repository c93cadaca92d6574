package cuda

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

var _ kernels.Graphs = (*Backend)(nil)

// graph is a captured device graph and the scratch its kernels use.
type graph struct {
	kernels.GraphHandle
	owner   *Backend
	g       Graph
	scratch []scratchBlock
	host    []func()
	// watch waits for a replay of a graph holding collectives under
	// their watchdog (watchReplays).
	watch []func() error
}

type scratchBlock struct {
	ptr   DevicePtr
	bytes int
}

// capture is the backend's state while a capture is open. The scratch an
// op takes while capturing (a bf16 copy of a GEMM's activations) is
// recorded into the graph at its address, so it must stay the graph's:
// handed back to the pool, a later Alloc could make it a live buffer that
// every replay would overwrite. So scratch put back while capturing goes
// to the capture's own free list (reused by the capture's later ops, in
// stream order as usual) and, at EndCapture, to the graph, which returns
// it to the pool when freed.
type capture struct {
	free  map[int][]DevicePtr
	owned []scratchBlock
	// host is the host bookkeeping of the captured ops, run after each
	// replay (afterEachRun).
	host []func()
	// watch and watchers are the collectives' replay watches
	// (watchReplays), one per communicator.
	watch    []func() error
	watchers map[any]bool
}

// watchReplays makes each replay of the graph being captured wait for
// the graph under w, once per who (a collective's communicator,
// nccl_comm_cuda.go). A capture allows no host wait, so a collective
// captured on the stream is not waited for where it is issued; left to a
// later download's plain wait, a dead peer would hang it. Instead Replay
// waits for the graph under the collective's watchdog, which aborts the
// communicator and fails the step with a message — the wait a decode
// step makes for its tokens anyway, made watchful.
func (b *Backend) watchReplays(who any, w func() error) {
	c := b.capturing
	if c.watchers == nil {
		c.watchers = map[any]bool{}
	}
	if !c.watchers[who] {
		c.watchers[who] = true
		c.watch = append(c.watch, w)
	}
}

// BeginCapture starts a stream capture on the device. Errors queued before
// it are reported here, so a capture starts from a clean state.
func (b *Backend) BeginCapture() error {
	if err := b.err; err != nil {
		b.err = nil
		return err
	}
	if b.capturing != nil {
		return fmt.Errorf("%s: BeginCapture while a capture is open", b.Name())
	}
	if err := b.dev.BeginCapture(); err != nil {
		return err
	}
	b.capturing = &capture{free: map[int][]DevicePtr{}}
	return nil
}

// captureScratch takes scratch of class bytes while capturing.
func (b *Backend) captureScratch(class int) (DevicePtr, bool) {
	c := b.capturing
	if l := c.free[class]; len(l) > 0 {
		c.free[class] = l[:len(l)-1]
		return l[len(l)-1], true
	}
	if len(b.pool.free[class]) == 0 {
		b.fail(fmt.Errorf("%s: an op needs %d bytes of scratch while capturing a graph and the pool has none (run the captured work once before capturing it)", b.Name(), class))
		return 0, false
	}
	p, _, err := b.pool.get(class)
	if err != nil {
		b.fail(err)
		return 0, false
	}
	c.owned = append(c.owned, scratchBlock{p, class})
	return p, true
}

// EndCapture ends the capture. An op that failed while capturing (an
// allocation, an upload) spoils the capture: its error is returned and
// the graph discarded.
func (b *Backend) EndCapture() (kernels.Graph, error) {
	c := b.capturing
	if c == nil {
		return nil, fmt.Errorf("%s: EndCapture without BeginCapture", b.Name())
	}
	b.capturing = nil
	g, err := b.dev.EndCapture()
	if qerr := b.err; qerr != nil {
		b.err = nil
		switch {
		case err == nil:
			err = qerr
			b.fail(b.dev.DestroyGraph(g))
		case qerr.Error() != err.Error():
			// The op that failed first is the root cause; the device's
			// refusal to end the capture follows from it. Keep both.
			err = fmt.Errorf("%w; then %w", qerr, err)
		}
	}
	if err != nil {
		for _, s := range c.owned {
			b.fail(b.pool.put(s.ptr, s.bytes))
		}
		return nil, fmt.Errorf("%s: capturing a graph: %w", b.Name(), err)
	}
	return &graph{owner: b, g: g, scratch: c.owned, host: c.host, watch: c.watch}, nil
}

func (b *Backend) own(op string, g kernels.Graph) *graph {
	gg, ok := g.(*graph)
	if !ok || gg == nil || gg.owner != b || gg.g == 0 {
		panic(fmt.Sprintf("cuda: %s: not a live graph of this %s backend", op, b.Name()))
	}
	return gg
}

func (b *Backend) Replay(g kernels.Graph) {
	gg := b.own("Replay", g)
	b.pending = true
	b.fail(b.dev.LaunchGraph(gg.g))
	for _, f := range gg.host {
		f()
	}
	for _, w := range gg.watch {
		b.fail(w())
	}
}

func (b *Backend) FreeGraph(g kernels.Graph) {
	gg := b.own("FreeGraph", g)
	b.fail(b.dev.DestroyGraph(gg.g))
	for _, s := range gg.scratch {
		b.fail(b.pool.put(s.ptr, s.bytes))
	}
	gg.g, gg.scratch, gg.host, gg.watch = 0, nil, nil, nil
}
