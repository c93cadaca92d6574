package cuda

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

var _ kernels.Graphs = (*Backend)(nil)

// graph is a captured device graph.
type graph struct {
	kernels.GraphHandle
	owner *Backend
	g     Graph
}

// BeginCapture starts a stream capture on the device. Errors queued before
// it are reported here, so a capture starts from a clean state.
func (b *Backend) BeginCapture() error {
	if err := b.err; err != nil {
		b.err = nil
		return err
	}
	return b.dev.BeginCapture()
}

// EndCapture ends the capture. An op that failed while capturing (an
// allocation, an upload) spoils the capture: its error is returned and
// the graph discarded.
func (b *Backend) EndCapture() (kernels.Graph, error) {
	g, err := b.dev.EndCapture()
	if qerr := b.err; qerr != nil {
		b.err = nil
		if err == nil {
			err = qerr
			b.fail(b.dev.DestroyGraph(g))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: capturing a graph: %w", b.Name(), err)
	}
	return &graph{owner: b, g: g}, nil
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
}

func (b *Backend) FreeGraph(g kernels.Graph) {
	gg := b.own("FreeGraph", g)
	b.fail(b.dev.DestroyGraph(gg.g))
	gg.g = 0
}
