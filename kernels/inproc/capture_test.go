package inproc

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/emu"
)

// TestAllToAllCaptured: on 2 and 3 emu devices each rank captures one
// graph of Scale(send, 2), an all-to-all with fixed counts (rank r sends
// r+1+p rows to rank p) and Scale(recv, 3), then replays it three times
// over new inputs uploaded between replays. Capturing exchanges nothing
// (the group counts no call); each replay is one graph launch, with no
// host sync, allocation or copy inside it, makes one all-to-all, and
// leaves in recv 6× exactly the rows a plain loop cuts from the senders'
// inputs of that round, past them the sentinel it held.
func TestAllToAllCaptured(t *testing.T) {
	for _, size := range []int{2, 3} {
		t.Run(fmt.Sprintf("emu×%d", size), func(t *testing.T) {
			const width, rounds, tail = 4, 3, 2
			backends := make([]kernels.Backend, size)
			for i := range backends {
				b := emu.New()
				t.Cleanup(func() { b.Close() })
				backends[i] = b
			}
			rows := func(r, p int) int { return r + 1 + p }
			input := func(round, r, i int) float32 { return float32(1000*round + 100*r + i) }
			g, err := NewGroup(size, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			errs := runRanks(t, g, backends, time.Minute, func(rank int, c kernels.Collective) error {
				b := backends[rank].(*cuda.Backend)
				sendRows, recvRows := make([]int, size), make([]int, size)
				ns, nr := 0, 0
				for p := range size {
					sendRows[p], recvRows[p] = rows(rank, p), rows(p, rank)
					ns += sendRows[p]
					nr += recvRows[p]
				}
				send, recv := b.Alloc(kernels.F32, ns*width), b.Alloc(kernels.F32, (nr+tail)*width)
				b.Scale(send, 1, ns*width) // warm: a capture may not allocate the launch's scratch
				if err := b.BeginCapture(); err != nil {
					return err
				}
				b.Scale(send, 2, ns*width)
				if err := c.AllToAll(send, sendRows, recv, recvRows, width); err != nil {
					return err
				}
				b.Scale(recv, 3, nr*width)
				graph, err := b.EndCapture()
				if err != nil {
					return err
				}
				if n := g.Calls("all-to-all"); n != 0 {
					return fmt.Errorf("rank %d: %d all-to-all made while capturing", rank, n)
				}
				for round := range rounds {
					in := make([]float32, ns*width)
					for i := range in {
						in[i] = input(round, rank, i)
					}
					sentinel := make([]float32, (nr+tail)*width)
					for i := range sentinel {
						sentinel[i] = -7
					}
					b.Upload(send, in)
					b.Upload(recv, sentinel)
					before := b.Counts()
					b.Replay(graph)
					d := b.Counts().Sub(before)
					if d.GraphLaunches != 1 || d.Launches != 0 || d.Syncs != 0 || d.Allocs != 0 || d.HtoD != 0 || d.DtoH != 0 {
						return fmt.Errorf("rank %d round %d: the replay asked %v; want one graph launch and nothing else", rank, round, d)
					}
					out := make([]float32, (nr+tail)*width)
					b.Download(out, recv)
					if err := b.Sync(); err != nil {
						return err
					}
					at := 0
					for p := range size {
						start := 0
						for q := range rank {
							start += rows(p, q)
						}
						for i := range rows(p, rank) * width {
							want := 6 * input(round, p, start*width+i)
							if got := out[at*width+i]; math.Float32bits(got) != math.Float32bits(want) {
								return fmt.Errorf("rank %d round %d: element %d from rank %d is %v, want %v", rank, round, i, p, got, want)
							}
						}
						at += rows(p, rank)
					}
					for i := nr * width; i < len(out); i++ {
						if out[i] != -7 {
							return fmt.Errorf("rank %d round %d: element %d past the rows is %v, want the -7 it held", rank, round, i, out[i])
						}
					}
				}
				b.FreeGraph(graph)
				return nil
			})
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			if n := g.Calls("all-to-all"); n != rounds {
				t.Errorf("%d all-to-all counted, want one per replay (%d)", n, rounds)
			}
		})
	}
}
