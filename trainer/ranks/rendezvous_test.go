package ranks

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// freeAddr returns a loopback address with a port nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// rendezvousAll runs ranks (each given its rank and world size) of one
// job as goroutines and returns each one's id and error, and how many ids
// were made; a rank that has not returned within limit fails the test (a
// hang). took[i] is how long rank i waited.
func rendezvousAll(t *testing.T, addr string, ranks [][2]int, timeout, limit time.Duration) ([][IDBytes]byte, []error, int) {
	ids, errs, made, _ := rendezvousTimed(t, addr, ranks, timeout, limit)
	return ids, errs, made
}

func rendezvousTimed(t *testing.T, addr string, ranks [][2]int, timeout, limit time.Duration) (ids [][IDBytes]byte, errs []error, made int, took []time.Duration) {
	t.Helper()
	ids = make([][IDBytes]byte, len(ranks))
	errs = make([]error, len(ranks))
	took = make([]time.Duration, len(ranks))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, rw := range ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := Rank{Rank: rw[0], WorldSize: rw[1], Addr: addr, Launcher: "torchrun"}
			start := time.Now()
			defer func() { took[i] = time.Since(start) }()
			ids[i], errs[i] = Rendezvous(context.Background(), r, func() (id [IDBytes]byte, err error) {
				mu.Lock()
				made++
				mu.Unlock()
				_, err = rand.Read(id[:])
				return id, err
			}, timeout)
		}()
		if i == 0 {
			time.Sleep(10 * time.Millisecond) // most often rank 0 first; the others retry anyway
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("the ranks did not return within %v", limit)
	}
	return ids, errs, made, took
}

// TestRendezvousHandsOutOneID: 4 ranks, rank 0 started last this time and
// first in another run; every rank gets rank 0's id, made once.
func TestRendezvousHandsOutOneID(t *testing.T) {
	for _, order := range [][][2]int{{{0, 4}, {1, 4}, {2, 4}, {3, 4}}, {{3, 4}, {2, 4}, {1, 4}, {0, 4}}} {
		ids, errs, made := rendezvousAll(t, freeAddr(t), order, 10*time.Second, 20*time.Second)
		for i, err := range errs {
			if err != nil {
				t.Fatalf("rank %d: %v", order[i][0], err)
			}
			if ids[i] != ids[0] {
				t.Errorf("rank %d got another id than rank %d", order[i][0], order[0][0])
			}
		}
		if made != 1 || ids[0] == ([IDBytes]byte{}) {
			t.Errorf("the id was made %d times (want once, by rank 0), or is zero", made)
		}
	}
}

// TestRendezvousMissingRank: rank 2 of 3 never starts; ranks 0 and 1 end
// at the timeout, rank 0 naming rank 2, rank 1 told why.
func TestRendezvousMissingRank(t *testing.T) {
	start := time.Now()
	_, errs, made := rendezvousAll(t, freeAddr(t), [][2]int{{0, 3}, {1, 3}}, 300*time.Millisecond, 10*time.Second)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v with a 300ms timeout", took)
	}
	want := "rank(s) [2] of 3 did not reach rank 0"
	for i, err := range errs {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("rank %d: %v; want %q", i, err, want)
		}
	}
	if made != 0 {
		t.Errorf("an id was made without every rank")
	}
}

// TestRendezvousNoRankZero: rank 1 of 2 finds nobody listening and ends
// at the timeout saying so.
func TestRendezvousNoRankZero(t *testing.T) {
	addr := freeAddr(t)
	_, errs, _ := rendezvousAll(t, addr, [][2]int{{1, 2}}, 300*time.Millisecond, 10*time.Second)
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "rank 1 could not reach rank 0 at "+addr+" within 300ms") {
		t.Errorf("%v", errs[0])
	}
}

// TestRendezvousRefusesMismatches: a rank launched with another world
// size, or two processes claiming one rank, end rank 0 and the offending
// rank at once with a message naming the fault; every other rank is told
// the same, or — if it reached rank 0 only after rank 0 gave up — ends at
// its timeout unable to reach it, or is reset from the accept queue. A hello of another protocol version is
// refused by name.
func TestRendezvousRefusesMismatches(t *testing.T) {
	cases := map[string]struct {
		ranks [][2]int
		bad   int // index of the offending rank
		want  string
	}{
		"world size": {[][2]int{{0, 3}, {1, 3}, {2, 4}}, 2, "rank 2 has world size 4, rank 0 has 3"},
		"same rank":  {[][2]int{{0, 3}, {1, 3}, {1, 3}}, -1, "two processes say they are rank 1"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, errs, made, took := rendezvousTimed(t, freeAddr(t), c.ranks, 2*time.Second, 10*time.Second)
			if took[0] > time.Second || (c.bad > 0 && took[c.bad] > time.Second) {
				t.Errorf("took %v: a mismatch should not wait for the 2s timeout", took)
			}
			told := 0
			for i, err := range errs {
				switch {
				case err != nil && strings.Contains(err.Error(), c.want):
					told++
				case i > 0 && i != c.bad && err != nil && (strings.Contains(err.Error(), "could not reach rank 0") || strings.Contains(err.Error(), "closed the rendezvous")):
					// It reached rank 0 after rank 0 gave up: refused at
					// the dial, or reset while still in the accept queue.
				default:
					t.Errorf("rank index %d: %v; want %q", i, err, c.want)
				}
			}
			if told < 2 || made != 0 {
				t.Errorf("%d ranks told %q (want rank 0 and the offender at least), id made %d times", told, c.want, made)
			}
		})
	}
	t.Run("version", func(t *testing.T) {
		addr := freeAddr(t)
		res := make(chan error, 1)
		go func() {
			_, err := Rendezvous(context.Background(), Rank{WorldSize: 2, Addr: addr}, func() ([IDBytes]byte, error) { return [IDBytes]byte{1}, nil }, 5*time.Second)
			res <- err
		}()
		var c net.Conn
		var err error
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if c, err = net.Dial("tcp", addr); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		binary.Write(c, binary.BigEndian, hello{Magic: magic, Version: protocolVersion + 1, Rank: 1, World: 2})
		want := "rank 1 speaks rendezvous version " + strconv.Itoa(protocolVersion+1) + ", rank 0 version " + strconv.Itoa(protocolVersion)
		if err := <-res; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("rank 0: %v; want %q", err, want)
		}
		b := make([]byte, 512)
		n, _ := c.Read(b)
		if n < 3 || b[0] != replyError || !strings.Contains(string(b[3:n]), want) {
			t.Errorf("the other build was told %q", b[:n])
		}
	})
}

// TestRendezvousSingle: a one-rank job needs no network.
func TestRendezvousSingle(t *testing.T) {
	id, err := Rendezvous(context.Background(), Single, func() ([IDBytes]byte, error) { return [IDBytes]byte{7}, nil }, time.Second)
	if err != nil || id[0] != 7 {
		t.Errorf("%v %v", id[0], err)
	}
}

// TestJobNamesALostRank: after a rendezvous of 3 ranks kept open (Meet),
// rank 2's connection drops without a goodbye (its process died): rank 0
// and rank 1 each get an error naming rank 2 on Lost within seconds; a
// job whose ranks all Close reports nothing.
func TestJobNamesALostRank(t *testing.T) {
	meet := func(addr string) []*Job {
		jobs := make([]*Job, 3)
		errs := make([]error, 3)
		var wg sync.WaitGroup
		for r := range jobs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				jobs[r], errs[r] = Meet(context.Background(), Rank{Rank: r, WorldSize: 3, Addr: addr}, func() ([IDBytes]byte, error) { return [IDBytes]byte{9}, nil }, 5*time.Second)
			}()
		}
		wg.Wait()
		for r, err := range errs {
			if err != nil {
				t.Fatalf("rank %d: %v", r, err)
			}
		}
		return jobs
	}
	jobs := meet(freeAddr(t))
	jobs[2].conns[0].Close() // dies: no goodbye
	for r := 0; r < 2; r++ {
		select {
		case err := <-jobs[r].Lost():
			if !strings.Contains(err.Error(), "rank 2 of 3") || !strings.Contains(err.Error(), "is gone") {
				t.Errorf("rank %d: %v; want rank 2 named", r, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("rank %d was not told that rank 2 is gone", r)
		}
		jobs[r].Close()
	}
	jobs = meet(freeAddr(t))
	for _, j := range jobs {
		j.Close()
	}
	time.Sleep(200 * time.Millisecond)
	for r, j := range jobs {
		select {
		case err := <-j.Lost():
			t.Errorf("rank %d after a normal end: %v", r, err)
		default:
		}
	}
}

// TestAbandonIsLost: a rank that leaves with Abandon (a failed rank) is
// named on every other rank's Lost, as a dead one is; one that leaves with
// Close (a goodbye) is not.
func TestAbandonIsLost(t *testing.T) {
	for _, abandon := range []bool{true, false} {
		addr := freeAddr(t)
		jobs := make([]*Job, 3)
		var wg sync.WaitGroup
		for r := range 3 {
			wg.Go(func() {
				var err error
				jobs[r], err = Meet(context.Background(), Rank{Rank: r, WorldSize: 3, Addr: addr, Launcher: "torchrun"},
					func() ([IDBytes]byte, error) { return [IDBytes]byte{7}, nil }, 5*time.Second)
				if err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		if abandon {
			jobs[2].Abandon()
		} else {
			jobs[2].Close()
		}
		wait := 300 * time.Millisecond // for a goodbye to be taken for a loss
		if abandon {
			wait = 5 * time.Second
		}
		for r := range 2 {
			select {
			case err := <-jobs[r].Lost():
				if !abandon || !strings.Contains(err.Error(), "rank 2 of 3") {
					t.Errorf("abandon %v: rank %d: %v", abandon, r, err)
				}
			case <-time.After(wait):
				if abandon {
					t.Errorf("rank %d heard nothing of rank 2's leaving", r)
				}
			}
			jobs[r].Close()
		}
	}
}
