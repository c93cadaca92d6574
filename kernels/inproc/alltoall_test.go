package inproc

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

// TestAllToAll: 2, 3 and 4 ranks (cpu, and 2 emu devices) each send every
// rank a random number of rows (zero included) of width 3. The counts go
// first through ExchangeCounts, as one count per rank and as two per rank
// (per expert, k = 2), and each rank receives exactly what the senders
// addressed to it. Each rank's received rows equal, bit for bit, those a
// plain loop cuts from the senders' inputs (rank p's rows for rank r
// follow its rows for the ranks below r; the receiver stacks them in rank
// order); the receive buffer's tail past the rows and the send buffer are
// unchanged; the ranks arrive in a random order; the group counts one
// call of each kind. Each case runs over F32 buffers and over BF16 ones
// (a bf16 layer's rows: bf16 values, moved bit for bit).
func TestAllToAll(t *testing.T) {
	cases := map[string]func() []kernels.Backend{"cpu×2": func() []kernels.Backend { return cpus(2) }, "cpu×3": func() []kernels.Backend { return cpus(3) },
		"cpu×4": func() []kernels.Backend { return cpus(4) }, "emu×2": func() []kernels.Backend { return []kernels.Backend{emu.New(), emu.New()} }}
	for name, newBackends := range cases {
		for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
			t.Run(fmt.Sprintf("%s,%v", name, dt), func(t *testing.T) { checkAllToAll(t, newBackends(), dt) })
		}
	}
}

func checkAllToAll(t *testing.T, backends []kernels.Backend, dt kernels.DType) {
	const width, tail = 3, 5
	size := len(backends)
	rng := rand.New(rand.NewSource(int64(10 + size)))
	rows := make([][]int, size) // rows[r][p]: rank r sends rank p
	sends := make([][]float32, size)
	for r := range rows {
		rows[r] = make([]int, size)
		total := 0
		for p := range rows[r] {
			rows[r][p] = rng.Intn(4)
			total += rows[r][p]
		}
		sends[r] = make([]float32, total*width)
		for i := range sends[r] {
			sends[r][i] = float32(rng.NormFloat64())
			if dt == kernels.BF16 {
				sends[r][i] = kerneltest.RoundBF16(sends[r][i])
			}
		}
	}
	// What rank r must hold: for each sender p in order, p's rows for r.
	want := make([][]float32, size)
	for r := range want {
		for p := range size {
			start := 0
			for q := range r {
				start += rows[p][q]
			}
			want[r] = append(want[r], sends[p][start*width:(start+rows[p][r])*width]...)
		}
	}
	g, err := NewGroup(size, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := make([][]float32, size)
	errs := runRanks(t, g, backends, 30*time.Second, func(rank int, c kernels.Collective) error {
		b := backends[rank]
		delay := rand.New(rand.NewSource(int64(rank)))
		time.Sleep(time.Duration(delay.Intn(3)) * time.Millisecond)
		recvRows, err := c.ExchangeCounts(rows[rank])
		if err != nil {
			return err
		}
		// Per expert: rank p's two experts get rows[rank][p] and its double.
		perExpert := make([]int, 0, 2*size)
		for _, n := range rows[rank] {
			perExpert = append(perExpert, n, 2*n)
		}
		experts, err := c.ExchangeCounts(perExpert)
		if err != nil {
			return err
		}
		for p := range size {
			if recvRows[p] != rows[p][rank] || experts[2*p] != rows[p][rank] || experts[2*p+1] != 2*rows[p][rank] {
				return fmt.Errorf("rank %d: counts from rank %d: %d and %v, want %d", rank, p, recvRows[p], experts[2*p:2*p+2], rows[p][rank])
			}
		}
		send := b.Alloc(dt, max(1, len(sends[rank])))
		b.Upload(send, append(slices.Clone(sends[rank]), make([]float32, send.Len()-len(sends[rank]))...))
		recv := b.Alloc(dt, len(want[rank])+tail)
		sentinel := make([]float32, recv.Len())
		for i := range sentinel {
			sentinel[i] = -7
		}
		b.Upload(recv, sentinel)
		time.Sleep(time.Duration(delay.Intn(3)) * time.Millisecond)
		if err := c.AllToAll(send, rows[rank], recv, recvRows, width); err != nil {
			return err
		}
		out := make([]float32, recv.Len())
		b.Download(out, recv)
		got[rank] = out
		back := make([]float32, send.Len())
		b.Download(back, send)
		if !slices.Equal(back[:len(sends[rank])], sends[rank]) {
			return fmt.Errorf("rank %d: the send buffer changed", rank)
		}
		return nil
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for r := range size {
		n := len(want[r])
		for i := range n {
			if math.Float32bits(got[r][i]) != math.Float32bits(want[r][i]) {
				t.Fatalf("rank %d element %d: %v, want %v", r, i, got[r][i], want[r][i])
			}
		}
		for i := n; i < n+tail; i++ {
			if got[r][i] != -7 {
				t.Errorf("rank %d: element %d past the received rows is %v, want the -7 it held", r, i, got[r][i])
			}
		}
	}
	if g.Calls("all-to-all") != 1 || g.Calls("counts") != 2 {
		t.Errorf("calls counted: %d all-to-all, %d counts; want 1 and 2", g.Calls("all-to-all"), g.Calls("counts"))
	}
}

// TestAllToAllMismatchFails: counts the ranks disagree on (rank 0 sends 2
// rows to rank 1, which expects 3), different row widths or dtypes, and count
// blocks of different sizes each fail every rank at once with a message
// naming them, and leave the group aborted.
func TestAllToAllMismatchFails(t *testing.T) {
	for name, c := range map[string]struct {
		call func(rank int, c kernels.Collective, b kernels.Backend) error
		want string
	}{
		"rows": {func(rank int, c kernels.Collective, b kernels.Backend) error {
			recv := []int{1, 1}
			if rank == 1 {
				recv = []int{3, 1}
			}
			return c.AllToAll(b.Alloc(kernels.F32, 8), []int{1, 2}, b.Alloc(kernels.F32, 8), recv, 2)
		}, "rank 0 sends 2 rows to rank 1, which expects 3 from it"},
		"width": {func(rank int, c kernels.Collective, b kernels.Backend) error {
			if rank == 1 {
				time.Sleep(20 * time.Millisecond) // rank 0 opens the call
			}
			return c.AllToAll(b.Alloc(kernels.F32, 8), []int{1, 1}, b.Alloc(kernels.F32, 8), []int{1, 1}, 2+rank)
		}, "rank 1 called all-to-all of 3 elements but rank 0 called all-to-all of 2"},
		"dtype": {func(rank int, c kernels.Collective, b kernels.Backend) error {
			dt := []kernels.DType{kernels.BF16, kernels.F32}[rank]
			return c.AllToAll(b.Alloc(dt, 8), []int{1, 1}, b.Alloc(dt, 8), []int{1, 1}, 2)
		}, "rank 1 moves f32 rows but rank 0 bf16"},
		"counts": {func(rank int, c kernels.Collective, b kernels.Backend) error {
			if rank == 1 {
				time.Sleep(20 * time.Millisecond)
			}
			_, err := c.ExchangeCounts(make([]int, 2*(rank+1)))
			return err
		}, "rank 1 called counts of 4 elements but rank 0 called counts of 2"},
	} {
		t.Run(name, func(t *testing.T) {
			backends := cpus(2)
			g, err := NewGroup(2, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			errs := runRanks(t, g, backends, 5*time.Second, func(rank int, col kernels.Collective) error {
				return c.call(rank, col, backends[rank])
			})
			for r, err := range errs {
				if err == nil || !errors.Is(err, kernels.ErrCollectiveAborted) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("rank %d: %v; want %q", r, err, c.want)
				}
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("the mismatch took %v to report; it should not wait for the timeout", took)
			}
			if err := g.exchangeBarrier(0); !errors.Is(err, kernels.ErrCollectiveAborted) {
				t.Errorf("a call after the mismatch: %v, want the abort's error", err)
			}
		})
	}
}

// TestAllToAllAbortAndTimeout: rank 0 waits in an all-to-all while rank 1
// aborts instead of arriving, and returns the abort's reason at once; in
// another group rank 1 never calls and rank 0's all-to-all ends at the
// timeout naming it.
func TestAllToAllAbortAndTimeout(t *testing.T) {
	for name, c := range map[string]struct {
		timeout time.Duration
		rank1   func(c kernels.Collective)
		want    string
	}{
		"abort":   {time.Minute, func(c kernels.Collective) { time.Sleep(20 * time.Millisecond); c.Abort(errors.New("its step failed")) }, "rank 1 aborted: its step failed"},
		"missing": {100 * time.Millisecond, func(kernels.Collective) {}, "rank(s) [1] of 2 did not arrive within 100ms"},
	} {
		t.Run(name, func(t *testing.T) {
			backends := cpus(2)
			g, err := NewGroup(2, c.timeout)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			errs := runRanks(t, g, backends, 5*time.Second, func(rank int, col kernels.Collective) error {
				if rank == 1 {
					c.rank1(col)
					return nil
				}
				b := backends[0]
				return col.AllToAll(b.Alloc(kernels.F32, 4), []int{1, 1}, b.Alloc(kernels.F32, 4), []int{1, 1}, 2)
			})
			if errs[0] == nil || !errors.Is(errs[0], kernels.ErrCollectiveAborted) || !strings.Contains(errs[0].Error(), c.want) {
				t.Errorf("rank 0: %v; want %q", errs[0], c.want)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("rank 0 returned after %v", took)
			}
		})
	}
}

// TestAllToAllRefusesBadCalls: what one rank can see wrong in its own call
// — buffers of two dtypes or of one not F32 or BF16, a count list not one per rank, a negative count, rows
// that overrun a buffer, counts not in blocks per rank — fails at once and
// aborts the group (the peers would otherwise wait on a call that never
// comes).
func TestAllToAllRefusesBadCalls(t *testing.T) {
	b := cpus(1)[0]
	f := func(n int) kernels.Buffer { return b.Alloc(kernels.F32, n) }
	for want, call := range map[string]func(c kernels.Collective) error{
		"all-to-all of bf16 rows into f32: want F32 or BF16 buffers, both of one dtype": func(c kernels.Collective) error {
			return c.AllToAll(b.Alloc(kernels.BF16, 4), []int{1, 1}, f(4), []int{1, 1}, 2)
		},
		"all-to-all of i32 rows into i32": func(c kernels.Collective) error {
			return c.AllToAll(b.Alloc(kernels.I32, 4), []int{1, 1}, b.Alloc(kernels.I32, 4), []int{1, 1}, 2)
		},
		"a count for each of 2 ranks": func(c kernels.Collective) error { return c.AllToAll(f(4), []int{1}, f(4), []int{1, 1}, 2) },
		"a count is negative":         func(c kernels.Collective) error { return c.AllToAll(f(4), []int{1, -1}, f(4), []int{0, 0}, 2) },
		"3 rows of 2 do not fit its buffer of 4 elements": func(c kernels.Collective) error {
			return c.AllToAll(f(8), []int{1, 1}, f(4), []int{1, 2}, 2)
		},
		"want a block of the same size for each of 2 ranks": func(c kernels.Collective) error { _, err := c.ExchangeCounts([]int{1, 2, 3}); return err },
	} {
		g, _ := NewGroup(2, time.Minute)
		c, err := g.Join(0, b)
		if err != nil {
			t.Fatal(err)
		}
		if err := call(c); err == nil || !errors.Is(err, kernels.ErrCollectiveAborted) || !strings.Contains(err.Error(), want) {
			t.Errorf("%v; want %q", err, want)
		}
		if err := g.exchangeBarrier(1); !errors.Is(err, kernels.ErrCollectiveAborted) {
			t.Errorf("%s: the group is not aborted: %v", want, err)
		}
	}
}
