//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/kernels"
	"gorgonia.org/cu"
)

// TestNCCLOnGPU forms one communicator over every GPU of the machine (up
// to 4; one rank per GPU, all in this process) and checks: the all-reduce
// sums exactly (rank r holds (r+1)·x with x a small multiple of 1/4, so
// every partial sum is exact in f32 and the result is x·n(n+1)/2) with the
// same bits on every rank; a barrier returns; the counts exchange and the
// all-to-all move every rank's rows where checkAllToAllOnGPU's plain loop
// puts them (one GPU: to itself); an all-to-all with fixed counts captured
// into a graph moves each replay's rows (checkCapturedAllToAllOnGPU); and,
// with two GPUs or more,
// a collective that rank 1 never joins ends rank 0 at the watchdog's
// timeout with an aborted-collective error instead of hanging. Needs a GPU
// and libnccl.so.2 (the torch wheels' nvidia/nccl/lib is found).
func TestNCCLOnGPU(t *testing.T) {
	path, err := NCCLPath()
	if err != nil {
		t.Fatal(err)
	}
	v, err := NCCLVersion()
	if err != nil {
		t.Fatal(err)
	}
	n, err := cu.NumDevices()
	if err != nil {
		t.Fatal(err)
	}
	n = min(n, 4)
	t.Logf("NCCL %d from %s; %d rank(s), one per GPU", v, path, n)
	id, err := NCCLUniqueID()
	if err != nil {
		t.Fatal(err)
	}
	backends := make([]*Backend, n)
	comms := make([]kernels.Collective, n)
	for r := range backends {
		d, err := openDriver(r)
		if err != nil {
			t.Fatal(err)
		}
		backends[r] = New(d)
		defer backends[r].Close()
	}
	// ncclCommInitRank waits for every rank: one goroutine each.
	const timeout = 5 * time.Second
	each(t, n, func(r int) error {
		var err error
		comms[r], err = NewNCCL(backends[r], id, r, n, timeout)
		return err
	})
	const size = 1 << 20
	got := make([][]float32, n)
	each(t, n, func(r int) error {
		b := backends[r]
		buf := b.Alloc(kernels.F32, size)
		defer b.Free(buf)
		host := make([]float32, size)
		for i := range host {
			host[i] = float32(r+1) * float32(i%1024-512) / 4
		}
		b.Upload(buf, host)
		if err := comms[r].AllReduceSum(buf); err != nil {
			return err
		}
		got[r] = make([]float32, size)
		b.Download(got[r], buf)
		return comms[r].Barrier()
	})
	tri := float32(n * (n + 1) / 2)
	for r := range got {
		for i, x := range got[r] {
			want := tri * float32(i%1024-512) / 4
			if math.Float32bits(x) != math.Float32bits(want) || math.Float32bits(x) != math.Float32bits(got[0][i]) {
				t.Fatalf("rank %d element %d: %v, want %v (rank 0: %v)", r, i, x, want, got[0][i])
			}
		}
	}
	checkAllToAllOnGPU(t, backends, comms, kernels.F32)
	checkAllToAllOnGPU(t, backends, comms, kernels.BF16)
	checkCapturedAllToAllOnGPU(t, backends, comms)
	if n < 2 {
		t.Log("one GPU: the missing-peer check needs two")
		for _, c := range comms {
			c.Close()
		}
		return
	}
	// Rank 1 stays away: rank 0's all-reduce must end at the timeout.
	start := time.Now()
	buf := backends[0].Alloc(kernels.F32, size)
	err = comms[0].AllReduceSum(buf)
	took := time.Since(start)
	t.Logf("with rank 1 absent: %v after %v", err, took)
	if err == nil || !errors.Is(err, kernels.ErrCollectiveAborted) || !strings.Contains(err.Error(), "a peer is hung") {
		t.Errorf("want an aborted collective naming a hung peer, got %v", err)
	}
	if took > 3*timeout {
		t.Errorf("took %v with a %v timeout", took, timeout)
	}
	for r := 1; r < n; r++ {
		comms[r].Abort(errors.New("test over"))
	}
}

// each runs f for every rank in its own goroutine and fails the test with
// the ranks' errors; it gives up after a minute (a hang).
func each(t *testing.T, n int, f func(r int) error) {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func() { defer wg.Done(); errs[r] = f(r) }()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the ranks did not return within a minute")
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// checkAllToAllOnGPU: rank r sends rank p (r + 2p) mod 3 rows of 5 floats
// (zero rows included), each element naming its sender, receiver, row and
// column; the counts go through ExchangeCounts first; each rank's receive
// buffer must hold, bit for bit, the rows addressed to it in sender order,
// and its tail past them the -1 it held. Over BF16 buffers (ncclBfloat16)
// each element is 2^(from + 4·to) · (1 + row/4 + col/32), exact in bf16,
// and names the same four.
func checkAllToAllOnGPU(t *testing.T, backends []*Backend, comms []kernels.Collective, dt kernels.DType) {
	t.Helper()
	const width = 5
	n := len(backends)
	rows := func(from, to int) int { return (from + 2*to) % 3 }
	value := func(from, to, row, col int) float32 { return float32(from*100000 + to*10000 + row*10 + col) }
	if dt == kernels.BF16 {
		value = func(from, to, row, col int) float32 {
			return float32(math.Ldexp(1+float64(row)/4+float64(col)/32, from+4*to))
		}
	}
	each(t, n, func(r int) error {
		b := backends[r]
		sendRows := make([]int, n)
		var send []float32
		for p := range sendRows {
			sendRows[p] = rows(r, p)
			for i := range sendRows[p] * width {
				send = append(send, value(r, p, i/width, i%width))
			}
		}
		recvRows, err := comms[r].ExchangeCounts(sendRows)
		if err != nil {
			return err
		}
		var want []float32
		for p := range recvRows {
			if recvRows[p] != rows(p, r) {
				return fmt.Errorf("rank %d: %d rows from rank %d, want %d", r, recvRows[p], p, rows(p, r))
			}
			for i := range recvRows[p] * width {
				want = append(want, value(p, r, i/width, i%width))
			}
		}
		sb, rb := b.Alloc(dt, max(1, len(send))), b.Alloc(dt, len(want)+3)
		defer b.Free(sb)
		defer b.Free(rb)
		b.Upload(sb, append(send, make([]float32, sb.Len()-len(send))...))
		tail := make([]float32, rb.Len())
		for i := range tail {
			tail[i] = -1
		}
		b.Upload(rb, tail)
		if err := comms[r].AllToAll(sb, sendRows, rb, recvRows, width); err != nil {
			return err
		}
		got := make([]float32, rb.Len())
		b.Download(got, rb)
		for i, x := range got {
			w := float32(-1)
			if i < len(want) {
				w = want[i]
			}
			if math.Float32bits(x) != math.Float32bits(w) {
				return fmt.Errorf("rank %d: %v: received element %d is %v, want %v", r, dt, i, x, w)
			}
		}
		return nil
	})
}

// TestNCCLJoinAtOnGPU: GPU 0 joins a group at an id made apart, as a
// process of a multi-node job does with the id the rendezvous handed it
// (kernels.NewGroupID on rank 0, kernels.JoinGroupAt here: rank 0 of 1);
// its all-reduce leaves its values as they are (a sum over one rank),
// bit for bit; an id of the wrong size is refused before any NCCL call.
// Needs a GPU and libnccl.so.2.
func TestNCCLJoinAtOnGPU(t *testing.T) {
	d, err := openDriver(0)
	if err != nil {
		t.Fatal(err)
	}
	be := New(d)
	defer be.Close()
	id, ok, err := kernels.NewGroupID(be.Name())
	if !ok || err != nil || len(id) != NCCLUniqueIDBytes {
		t.Fatalf("NewGroupID(%q): %d bytes, ok %v, %v", be.Name(), len(id), ok, err)
	}
	if _, _, err := kernels.JoinGroupAt([]kernels.Backend{be}, &kernels.GroupAt{ID: id[:16], Size: 1}, 5*time.Second); err == nil || !strings.Contains(err.Error(), "an id of 16 bytes") {
		t.Errorf("a short id: %v", err)
	}
	cs, ok, err := kernels.JoinGroupAt([]kernels.Backend{be}, &kernels.GroupAt{ID: id, Size: 1}, 5*time.Second)
	if !ok || err != nil {
		t.Fatalf("ok %v, %v", ok, err)
	}
	defer cs[0].Close()
	if cs[0].Rank() != 0 || cs[0].Size() != 1 {
		t.Errorf("rank %d of %d", cs[0].Rank(), cs[0].Size())
	}
	want := []float32{1.25, -3, 0.5, 7}
	buf := be.Alloc(kernels.F32, len(want))
	defer be.Free(buf)
	be.Upload(buf, want)
	if err := cs[0].AllReduceSum(buf); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, len(want))
	be.Download(got, buf)
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Errorf("value %d: %v after the all-reduce, %v before", i, got[i], want[i])
		}
	}
}

// checkCapturedAllToAllOnGPU: each rank captures one graph of an
// all-to-all with fixed counts (2 rows of 3 floats to every rank, the
// expert-parallel decode step's exchange) and replays it twice over new
// rows uploaded between replays; each replay leaves in the receive buffer
// the rows every rank sent in it, bit for bit.
func checkCapturedAllToAllOnGPU(t *testing.T, backends []*Backend, comms []kernels.Collective) {
	t.Helper()
	const rows, width = 2, 3
	n := len(backends)
	value := func(round, from, to, i int) float32 { return float32(round*1000000 + from*10000 + to*100 + i) }
	each(t, n, func(r int) error {
		b := backends[r]
		counts := make([]int, n)
		for p := range counts {
			counts[p] = rows
		}
		sb, rb := b.Alloc(kernels.F32, n*rows*width), b.Alloc(kernels.F32, n*rows*width)
		defer b.Free(sb)
		defer b.Free(rb)
		if err := b.BeginCapture(); err != nil {
			return err
		}
		if err := comms[r].AllToAll(sb, counts, rb, counts, width); err != nil {
			return err
		}
		g, err := b.EndCapture()
		if err != nil {
			return err
		}
		defer b.FreeGraph(g)
		for round := range 2 {
			send := make([]float32, 0, n*rows*width)
			for p := range n {
				for i := range rows * width {
					send = append(send, value(round, r, p, i))
				}
			}
			b.Upload(sb, send)
			b.Replay(g)
			got := make([]float32, n*rows*width)
			b.Download(got, rb)
			if err := b.Sync(); err != nil {
				return err
			}
			for p := range n {
				for i := range rows * width {
					if x, w := got[p*rows*width+i], value(round, p, r, i); math.Float32bits(x) != math.Float32bits(w) {
						return fmt.Errorf("rank %d replay %d: element %d from rank %d is %v, want %v", r, round, i, p, x, w)
					}
				}
			}
		}
		return nil
	})
}
