package netcoll

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
)

// job is a hub whose first local ranks are joined in process and whose
// other ranks dial it over TCP on the loopback, as other processes do.
func job(t *testing.T, size, local int, timeout time.Duration, dial []int) (*Hub, []kernels.Collective) {
	t.Helper()
	h, err := Listen(size, local, timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	id, err := ParseID(h.ID().Bytes())
	if err != nil || id != h.ID() {
		t.Fatalf("the id does not survive its encoding: %v", err)
	}
	cs := make([]kernels.Collective, size)
	for r := range local {
		if cs[r], err = h.Join(r, cpu.New()); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range dial {
		if cs[r], err = Dial("127.0.0.1", id, r, size, cpu.New(), timeout); err != nil {
			t.Fatal(err)
		}
	}
	return h, cs
}

// each runs f on every rank that has a collective, one goroutine each,
// and fails the test if they have not all returned within limit.
func each(t *testing.T, cs []kernels.Collective, limit time.Duration, f func(r int, c kernels.Collective) error) []error {
	t.Helper()
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for r, c := range cs {
		if c != nil {
			wg.Go(func() { errs[r] = f(r, c) })
		}
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

// TestAllReduceAcrossConnections: 4 ranks, two joined at the hub and two
// over TCP; each sums its own random values over 3 calls; every rank gets
// the bits of a plain float32 loop adding the ranks in order, 0 first.
func TestAllReduceAcrossConnections(t *testing.T) {
	const size, n = 4, 1000
	_, cs := job(t, size, 2, 10*time.Second, []int{2, 3})
	rng := rand.New(rand.NewSource(1))
	for call := range 3 {
		in := make([][]float32, size)
		want := make([]float32, n)
		for r := range in {
			in[r] = make([]float32, n)
			for i := range in[r] {
				in[r][i] = float32(rng.NormFloat64()) * float32(call+1)
			}
		}
		for i := range want {
			for r := range size {
				want[i] += in[r][i]
			}
		}
		got := make([][]float32, size)
		errs := each(t, cs, 20*time.Second, func(r int, c kernels.Collective) error {
			be := cpu.New()
			buf := be.Alloc(kernels.F32, n)
			be.Upload(buf, in[r])
			if err := c.AllReduceSum(buf); err != nil {
				return err
			}
			got[r] = make([]float32, n)
			be.Download(got[r], buf)
			return be.Sync()
		})
		for r := range size {
			if errs[r] != nil {
				t.Fatalf("call %d rank %d: %v", call, r, errs[r])
			}
			if !slices.Equal(got[r], want) {
				t.Fatalf("call %d rank %d: not the rank-order sum's bits", call, r)
			}
		}
	}
}

// TestAllToAllAcrossConnections: 3 ranks (one at the hub, two over TCP)
// exchange counts, then rows of width 2 whose values say who sent them to
// whom; each rank receives, in rank order, exactly the rows addressed to
// it, and the tail of its receive buffer past them is kept; over F32 and
// over BF16 buffers (the values, integers below 256, exact in bf16).
func TestAllToAllAcrossConnections(t *testing.T) {
	for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
		t.Run(dt.String(), func(t *testing.T) {
			const size, width = 3, 2
			_, cs := job(t, size, 1, 10*time.Second, []int{1, 2})
			rows := func(from, to int) int { return (from+2*to)%3 + 1 }
			errs := each(t, cs, 20*time.Second, func(r int, c kernels.Collective) error {
				sendRows := make([]int, size)
				var send []float32
				for to := range size {
					sendRows[to] = rows(r, to)
					for k := range sendRows[to] {
						send = append(send, float32(100*r+10*to+k), -1)
					}
				}
				recvRows, err := c.ExchangeCounts(sendRows)
				if err != nil {
					return err
				}
				var want []float32
				for from := range size {
					if recvRows[from] != rows(from, r) {
						return fmt.Errorf("counts from rank %d: %d, want %d", from, recvRows[from], rows(from, r))
					}
					for k := range rows(from, r) {
						want = append(want, float32(100*from+10*r+k), -1)
					}
				}
				be := cpu.New()
				sb, rb := be.Alloc(dt, len(send)), be.Alloc(dt, len(want)+3)
				be.Upload(sb, send)
				be.Upload(rb, append(make([]float32, len(want)), 7, 7, 7))
				if err := c.AllToAll(sb, sendRows, rb, recvRows, width); err != nil {
					return err
				}
				got := make([]float32, len(want)+3)
				be.Download(got, rb)
				if !slices.Equal(got, append(want, 7, 7, 7)) {
					return errors.New("rows: got another exchange than the one addressed")
				}
				return be.Sync()
			})
			for r, err := range errs {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
		})
	}
}

// TestFailuresNameTheRank: a rank whose connection drops without a
// goodbye (its process killed) while the others wait in an all-reduce
// ends their calls at once, naming it; a rank that never dials ends the
// others' call at the timeout, naming it; a mismatched call fails every
// rank; every error wraps kernels.ErrCollectiveAborted, and later calls
// fail too.
func TestFailuresNameTheRank(t *testing.T) {
	barrier := func(r int, c kernels.Collective) error { return c.Barrier() }
	t.Run("killed", func(t *testing.T) {
		_, cs := job(t, 3, 1, 30*time.Second, []int{1, 2})
		if err := each(t, cs, 10*time.Second, barrier); errors.Join(err...) != nil {
			t.Fatal(err)
		}
		dead := cs[2].(*remote)
		cs[2] = nil
		go func() { time.Sleep(200 * time.Millisecond); dead.c.c.Close() }()
		start := time.Now()
		errs := each(t, cs, 10*time.Second, barrier)
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("the others took %v to notice", took)
		}
		for r, err := range errs[:2] {
			if !errors.Is(err, kernels.ErrCollectiveAborted) || !strings.Contains(fmtErr(err), "rank 2 of 3") || !strings.Contains(fmtErr(err), "is gone") {
				t.Errorf("rank %d: %v", r, err)
			}
		}
		for r, err := range each(t, cs, 10*time.Second, barrier)[:2] {
			if !errors.Is(err, kernels.ErrCollectiveAborted) {
				t.Errorf("rank %d's next call: %v", r, err)
			}
		}
	})
	t.Run("never arrives", func(t *testing.T) {
		_, cs := job(t, 3, 1, 500*time.Millisecond, []int{1})
		errs := each(t, cs, 10*time.Second, barrier)
		for r, err := range errs[:2] {
			if !errors.Is(err, kernels.ErrCollectiveAborted) || !strings.Contains(fmtErr(err), "rank(s) [2] of 3 did not arrive") {
				t.Errorf("rank %d: %v", r, err)
			}
		}
	})
	t.Run("mismatch", func(t *testing.T) {
		_, cs := job(t, 2, 1, 10*time.Second, []int{1})
		errs := each(t, cs, 10*time.Second, func(r int, c kernels.Collective) error {
			if r == 1 {
				_, err := c.ExchangeCounts([]int{1, 2})
				return err
			}
			return c.Barrier()
		})
		for r, err := range errs {
			if !errors.Is(err, kernels.ErrCollectiveAborted) || !strings.Contains(fmtErr(err), "every rank must make the same calls") {
				t.Errorf("rank %d: %v", r, err)
			}
		}
	})
	t.Run("hub gone", func(t *testing.T) {
		h, cs := job(t, 2, 1, 10*time.Second, []int{1})
		go func() { time.Sleep(200 * time.Millisecond); h.Close() }()
		err := cs[1].Barrier()
		if !errors.Is(err, kernels.ErrCollectiveAborted) || !strings.Contains(fmtErr(err), "rank 0") {
			t.Errorf("rank 1: %v", err)
		}
	})
	t.Run("abort", func(t *testing.T) {
		// Rank 1 waits alone at a barrier and aborts it: its call ends,
		// and rank 0's, made after, fails with the reason.
		_, cs := job(t, 2, 1, 10*time.Second, []int{1})
		go func() { time.Sleep(200 * time.Millisecond); cs[1].Abort(errors.New("rank 7 of the job is gone")) }()
		err1 := cs[1].Barrier()
		time.Sleep(100 * time.Millisecond)
		for r, err := range []error{cs[0].Barrier(), err1} {
			if !errors.Is(err, kernels.ErrCollectiveAborted) || !strings.Contains(fmtErr(err), "rank 7 of the job is gone") {
				t.Errorf("rank %d: %v", r, err)
			}
		}
	})
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
