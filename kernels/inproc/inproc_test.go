package inproc

import (
	"errors"
	"math"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/emu"
)

// runRanks runs f for each rank of a group of backends in its own
// goroutine, returning each rank's error; it fails the test if the ranks
// have not all returned within limit (a hang).
func runRanks(t *testing.T, g *Group, backends []kernels.Backend, limit time.Duration, f func(rank int, c kernels.Collective) error) []error {
	t.Helper()
	errs := make([]error, len(backends))
	var wg sync.WaitGroup
	for r, b := range backends {
		c, err := g.Join(r, b)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); errs[r] = f(r, c) }()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("the ranks did not return within %v", limit)
	}
	return errs
}

func cpus(n int) []kernels.Backend {
	bs := make([]kernels.Backend, n)
	for i := range bs {
		bs[i] = cpu.New()
	}
	return bs
}

// TestAllReduceSum: 2, 3 and 4 ranks (cpu, and 2 emu devices) each hold
// their own values; after the all-reduce every rank's buffer holds the same
// bits, within 1e-6 relative of the float64 sum of a plain loop over the
// ranks' inputs; the ranks arrive in a random order each call, which must
// not change the bits; the group counts one completed call per all-reduce.
func TestAllReduceSum(t *testing.T) {
	cases := map[string][]kernels.Backend{"cpu×2": cpus(2), "cpu×3": cpus(3), "cpu×4": cpus(4), "emu×2": {emu.New(), emu.New()}}
	for name, backends := range cases {
		t.Run(name, func(t *testing.T) {
			const n, calls = 1000, 3
			size := len(backends)
			rng := rand.New(rand.NewSource(int64(size)))
			inputs := make([][]float32, size)
			for r := range inputs {
				inputs[r] = make([]float32, n)
				for i := range inputs[r] {
					inputs[r][i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.Intn(5)-2)))
				}
			}
			g, err := NewGroup(size, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			got := make([][][]float32, size) // rank, call, values
			errs := runRanks(t, g, backends, 30*time.Second, func(rank int, c kernels.Collective) error {
				b := backends[rank]
				buf := b.Alloc(kernels.F32, n)
				defer b.Free(buf)
				delays := rand.New(rand.NewSource(int64(rank)))
				for k := 0; k < calls; k++ {
					b.Upload(buf, inputs[rank])
					time.Sleep(time.Duration(delays.Intn(3)) * time.Millisecond)
					if err := c.AllReduceSum(buf); err != nil {
						return err
					}
					out := make([]float32, n)
					b.Download(out, buf)
					got[rank] = append(got[rank], out)
				}
				return c.Barrier()
			})
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for i := 0; i < n; i++ {
				want := 0.0
				for r := range inputs {
					want += float64(inputs[r][i])
				}
				scale := 0.0
				for r := range inputs {
					scale += math.Abs(float64(inputs[r][i]))
				}
				worst = max(worst, math.Abs(float64(got[0][0][i])-want)/scale)
				for r := range got {
					for k := range got[r] {
						if math.Float32bits(got[r][k][i]) != math.Float32bits(got[0][0][i]) {
							t.Fatalf("rank %d call %d element %d: %v, rank 0 call 0 has %v: not bit-identical", r, k, i, got[r][k][i], got[0][0][i])
						}
					}
				}
			}
			if worst > 1e-6 {
				t.Errorf("sum off the float64 reference by %.3g relative to the sum of magnitudes (want ≤ 1e-6)", worst)
			}
			if g.Calls("all-reduce") != calls || g.Calls("barrier") != 1 {
				t.Errorf("calls counted: %d all-reduce, %d barrier; want %d and 1", g.Calls("all-reduce"), g.Calls("barrier"), calls)
			}
		})
	}
}

// TestMissingRankTimesOut: rank 2 of 3 never calls; the other two get an
// error naming it within the timeout instead of waiting for ever, and the
// group stays aborted for later calls.
func TestMissingRankTimesOut(t *testing.T) {
	backends := cpus(3)
	g, err := NewGroup(3, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	errs := runRanks(t, g, backends, 5*time.Second, func(rank int, c kernels.Collective) error {
		if rank == 2 {
			return nil
		}
		buf := backends[rank].Alloc(kernels.F32, 4)
		return c.AllReduceSum(buf)
	})
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the waiting ranks returned after %v, want about the 100ms timeout", took)
	}
	for r := 0; r < 2; r++ {
		if errs[r] == nil || !errors.Is(errs[r], kernels.ErrCollectiveAborted) || !strings.Contains(errs[r].Error(), "rank(s) [2] of 3 did not arrive within 100ms") {
			t.Errorf("rank %d: %v; want an aborted collective naming rank 2", r, errs[r])
		}
	}
	if err := g.exchangeBarrier(0); err == nil || !errors.Is(err, kernels.ErrCollectiveAborted) {
		t.Errorf("a call after the abort: %v, want the abort's error", err)
	}
}

// exchangeBarrier is a barrier call by rank outside a member (for the
// after-abort check).
func (g *Group) exchangeBarrier(rank int) error {
	_, err := g.exchange(rank, "barrier", 0, part{})
	return err
}

// TestMismatchedCallsFail: rank 1 all-reduces 5 elements where rank 0 has
// 4, and in another group calls a barrier where rank 0 all-reduces: both
// ranks of each get an error naming the two calls, at once.
func TestMismatchedCallsFail(t *testing.T) {
	for name, n1 := range map[string]int{"count": 5, "op": -1} {
		t.Run(name, func(t *testing.T) {
			backends := cpus(2)
			g, err := NewGroup(2, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			errs := runRanks(t, g, backends, 5*time.Second, func(rank int, c kernels.Collective) error {
				if rank == 1 {
					time.Sleep(20 * time.Millisecond) // rank 0 opens the call
					if n1 < 0 {
						return c.Barrier()
					}
					return c.AllReduceSum(backends[1].Alloc(kernels.F32, n1))
				}
				return c.AllReduceSum(backends[0].Alloc(kernels.F32, 4))
			})
			want := "rank 1 called all-reduce of 5 elements but rank 0 called all-reduce of 4"
			if n1 < 0 {
				want = "rank 1 called barrier of 0 elements but rank 0 called all-reduce of 4"
			}
			for r, err := range errs {
				if err == nil || !errors.Is(err, kernels.ErrCollectiveAborted) || !strings.Contains(err.Error(), want) {
					t.Errorf("rank %d: %v; want %q", r, err, want)
				}
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("the mismatch took %v to report; it should not wait for the timeout", took)
			}
		})
	}
}

// TestAbortReleasesWaitingRanks: rank 0 waits in a barrier; rank 1 aborts
// instead of arriving; rank 0 returns the abort's reason at once.
func TestAbortReleasesWaitingRanks(t *testing.T) {
	backends := cpus(2)
	g, err := NewGroup(2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	errs := runRanks(t, g, backends, 5*time.Second, func(rank int, c kernels.Collective) error {
		if rank == 1 {
			time.Sleep(20 * time.Millisecond)
			c.Abort(errors.New("its step failed"))
			return nil
		}
		return c.Barrier()
	})
	if errs[0] == nil || !errors.Is(errs[0], kernels.ErrCollectiveAborted) || !strings.Contains(errs[0].Error(), "rank 1 aborted: its step failed") {
		t.Errorf("rank 0: %v; want rank 1's abort", errs[0])
	}
}

// TestAllReduceRefusesBF16: the flat gradient buffer is F32; another dtype
// is an error (and aborts, as NCCL's invalid argument would leave peers
// waiting).
func TestAllReduceRefusesBF16(t *testing.T) {
	g, _ := NewGroup(1, time.Second)
	b := cpu.New()
	c, err := g.Join(0, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AllReduceSum(b.Alloc(kernels.BF16, 3)); err == nil || !strings.Contains(err.Error(), "want F32") {
		t.Errorf("BF16 all-reduce: %v", err)
	}
	if _, err := g.Join(0, b); err == nil {
		t.Error("rank 0 joined twice without an error")
	}
	if _, err := NewGroup(2, 0); err == nil {
		t.Error("a zero timeout was accepted")
	}
}
