package replicas

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/inproc"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/trainer/ranks"
)

// TestAllGatherBytes: 3 ranks of an inproc group hand each other bytes of
// odd, even and zero length (every byte value, the packing's edge
// cases); every rank gets every rank's bytes exactly, in rank order; and
// trajectories gathered come back field for field but for the example,
// which stays behind.
func TestAllGatherBytes(t *testing.T) {
	const size = 3
	g, err := inproc.NewGroup(size, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	data := [][]byte{make([]byte, 513), nil, {0xff, 0x00, 0x80, 0x7f}}
	for i := range data[0] {
		data[0][i] = byte(i * 7)
	}
	traj := rollout.Trajectory{PromptTokens: []int32{1, 2}, Tokens: []int32{3}, ModelMask: []bool{true}, Logprobs: []float32{-0.125}, Reward: 0.75,
		Metrics: map[string]float64{"m": 1.5}, Errors: []string{"e"}}
	traj.Example.ID = "left behind"
	var wg sync.WaitGroup
	for r := range size {
		c, err := g.Join(r, cpu.New())
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			be := cpu.New()
			got, err := allGather(c, be, data[r])
			if err != nil {
				t.Errorf("rank %d: %v", r, err)
				return
			}
			for p := range size {
				if !bytes.Equal(got[p], data[p]) {
					t.Errorf("rank %d: rank %d's %d bytes came as %d others", r, p, len(data[p]), len(got[p]))
				}
			}
			runs, err := gatherTrajectories(c, be, []rollout.Trajectory{traj})
			if err != nil || len(runs) != size || len(runs[r]) != 1 {
				t.Errorf("rank %d: %d runs, %v", r, len(runs), err)
				return
			}
			back := runs[(r+1)%size][0]
			if back.Example.ID != "" || back.Reward != 0.75 || back.Logprobs[0] != -0.125 || back.Metrics["m"] != 1.5 || back.Errors[0] != "e" || !back.ModelMask[0] {
				t.Errorf("rank %d: a trajectory came back as %+v", r, back)
			}
		})
	}
	wg.Wait()
	if n := g.Calls("all-to-all"); n != 2 {
		t.Errorf("%d all-to-alls for two gathers", n)
	}
}

// TestWorldRefusesAServer: a job of several processes whose rollouts a
// server would play ([inference]) is refused in one line naming the rank:
// each rank would play the whole step there, with other samples.
func TestWorldRefusesAServer(t *testing.T) {
	w := &World{Rank: ranks.Rank{Rank: 1, WorldSize: 2, Launcher: "torchrun"}}
	_, err := Open(context.Background(), Spec{World: w, First: Replica{Backend: cpu.New(), Engine: &rollout.ServerEngine{}}})
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "launched as rank 1 of 2 (torchrun) with [inference]") {
		t.Errorf("%v", err)
	}
}
