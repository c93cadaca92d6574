package emu

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/grpo-dev/grpo/kernels/cuda"
)

// Tests of the emulator itself, through the demo kernels (demo_kernels.cuh).

// upload and download move data the way the backend's staging does:
// through page-locked memory, an async copy and an event.
func upload[T any](t *testing.T, d *Device, v []T) cuda.DevicePtr {
	t.Helper()
	bytes := len(v) * int(unsafe.Sizeof(v[0]))
	p, err := d.Alloc(bytes)
	if err != nil {
		t.Fatal(err)
	}
	pin := pinned(t, d, bytes)
	copy(unsafe.Slice((*T)(pin), len(v)), v)
	ev := event(t, d)
	if err := errors.Join(d.CopyHtoDAsync(p, pin, bytes), d.Record(ev), d.WaitEvent(ev), d.HostFree(pin), d.DestroyEvent(ev)); err != nil {
		t.Fatal(err)
	}
	return p
}

func download[T any](t *testing.T, d *Device, p cuda.DevicePtr, n int) []T {
	t.Helper()
	var zero T
	bytes := n * int(unsafe.Sizeof(zero))
	pin := pinned(t, d, bytes)
	ev := event(t, d)
	if err := errors.Join(d.CopyDtoHAsync(pin, p, bytes), d.Record(ev), d.WaitEvent(ev)); err != nil {
		t.Fatal(err)
	}
	v := append([]T(nil), unsafe.Slice((*T)(pin), n)...)
	if err := errors.Join(d.HostFree(pin), d.DestroyEvent(ev)); err != nil {
		t.Fatal(err)
	}
	return v
}

func pinned(t *testing.T, d *Device, bytes int) unsafe.Pointer {
	t.Helper()
	p, err := d.HostAlloc(bytes)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func event(t *testing.T, d *Device) cuda.Event {
	t.Helper()
	e, err := d.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// blockSums runs kernel over in with blocks of bd threads and compares
// each block's sum with a float64 sum; it returns the worst relative error.
func blockSums(t *testing.T, kernel string, in []float32, bd int) float64 {
	d := NewDevice()
	defer d.Close()
	nb := (len(in) + bd - 1) / bd
	pin := upload(t, d, in)
	pout, _ := d.Alloc(4 * nb)
	if err := d.Launch(kernel, cuda.D1(nb), cuda.D1(bd), 4*bd, pout, pin, int32(len(in))); err != nil {
		t.Fatal(err)
	}
	got := download[float32](t, d, pout, nb)
	worst := 0.0
	for b := range nb {
		want := 0.0
		for i := b * bd; i < min(len(in), (b+1)*bd); i++ {
			want += float64(in[i])
		}
		e := math.Abs(float64(got[b])-want) / math.Max(1, math.Abs(want))
		if math.IsNaN(e) {
			e = math.Inf(1)
		}
		worst = math.Max(worst, e)
	}
	return worst
}

func ramp(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i%97) - 40.5
	}
	return v
}

func TestBlockReductionIsExact(t *testing.T) {
	for _, bd := range []int{32, 256, 1024} {
		if e := blockSums(t, "demo/demo_block_sum", ramp(5000), bd); e > 1e-6 {
			t.Errorf("shared-memory tree sum, block %d: relative error %g", bd, e)
		}
		if e := blockSums(t, "demo/demo_warp_block_sum", ramp(5000), bd); e > 1e-6 {
			t.Errorf("shuffle block_sum, block %d: relative error %g", bd, e)
		}
	}
}

// TestMissingSyncthreadsIsCaught: the reduction without the barrier after
// its loads reads shared memory before it is written. On a GPU that race
// may pass unnoticed for years; under emu it fails every time.
func TestMissingSyncthreadsIsCaught(t *testing.T) {
	if e := blockSums(t, "demo/demo_block_sum_missing_sync", ramp(4096), 256); e < 1e-3 {
		t.Fatalf("block sum with a missing __syncthreads matched the reference (relative error %g): the emulator hides races", e)
	}
}

func TestWarpIntrinsics(t *testing.T) {
	d := NewDevice()
	defer d.Close()
	out, _ := d.Alloc(64 * 6 * 4)
	if err := d.Launch("demo/demo_shuffles", cuda.D1(1), cuda.D1(64), 0, out); err != nil {
		t.Fatal(err)
	}
	got := download[int32](t, d, out, 64*6)
	for tid := range 64 {
		lane := tid % 32
		down := lane + 3
		if down >= 32 {
			down = lane
		}
		up := lane - 2
		if up < 0 {
			up = lane
		}
		want := []int32{
			int32(lane ^ 1),
			int32(down),
			int32(up),
			int32(lane&^15 + 7),
			int32(-1431655766), // 0xAAAAAAAA: odd lanes
			int32(100 + tid&^31 + (lane+1)%32),
		}
		for j, w := range want {
			if g := got[tid*6+j]; g != w {
				t.Errorf("thread %d, result %d: got %d, want %d", tid, j, g, w)
			}
		}
	}
}

func TestAtomicsAcrossParallelBlocks(t *testing.T) {
	d := NewDevice()
	defer d.Close()
	out, _ := d.Alloc(8)
	if err := d.Launch("demo/demo_atomic_count", cuda.D1(300), cuda.D1(96), 0, out); err != nil {
		t.Fatal(err)
	}
	got := download[int32](t, d, out, 2)
	if got[0] != 300*96 || got[1] != 299 {
		t.Fatalf("atomic count %d and max %d, want %d and 299", got[0], got[1], 300*96)
	}
	if n := d.Atomics("demo/demo_atomic_count"); n != 2*300*96 {
		t.Fatalf("Atomics counted %d atomic operations, the kernel made %d", n, 2*300*96)
	}
	if n := d.Atomics("demo/demo_block_sum"); n != 0 {
		t.Fatalf("Atomics counted %d for a kernel never launched", n)
	}
}

// TestReverseBlockOrder: blocks take arrival numbers from an atomic
// counter; with one worker thread (GOMAXPROCS 1, so the order is fixed)
// Forward runs block b b-th and Reverse runs it (63−b)-th.
func TestReverseBlockOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, o := range []BlockOrder{Forward, Reverse} {
		prev := SetBlockOrder(o)
		d := NewDevice()
		out, _ := d.Alloc(4 * 65)
		err := d.Launch("demo/demo_arrival_order", cuda.D1(64), cuda.D1(32), 0, out)
		got := download[int32](t, d, out, 65)
		d.Close()
		SetBlockOrder(prev)
		if err != nil {
			t.Fatal(err)
		}
		for b := range int32(64) {
			want := b
			if o == Reverse {
				want = 63 - b
			}
			if got[1+b] != want {
				t.Fatalf("order %d: block %d ran %d-th, want %d-th", o, b, got[1+b], want)
			}
		}
	}
}

func TestDivergentBarrierIsReported(t *testing.T) {
	d := NewDevice()
	defer d.Close()
	out, _ := d.Alloc(4 * 64)
	err := d.Launch("demo/demo_divergent_barrier", cuda.D1(1), cuda.D1(64), 0, out)
	if err == nil || !strings.Contains(err.Error(), "barrier deadlock") {
		t.Fatalf("a __syncthreads reached by half the block: got error %v, want a barrier deadlock report", err)
	}
}

func TestLaunchErrors(t *testing.T) {
	d := NewDevice()
	defer d.Close()
	out, _ := d.Alloc(64)
	for _, c := range []struct {
		name        string
		grid, block cuda.Dim3
		shared      int
		args        []any
		want        string
	}{
		{"no_such_kernel", cuda.D1(1), cuda.D1(32), 0, nil, "no kernel named no_such_kernel"},
		{"demo/demo_atomic_count", cuda.D1(1), cuda.D1(32), 0, []any{out, int32(1)}, "launched with 2 arguments, kernel takes 1"},
		{"demo/demo_atomic_count", cuda.D1(1), cuda.D1(32), 0, []any{int32(1)}, "argument 0 has 4 bytes, kernel expects 8"},
		{"demo/demo_atomic_count", cuda.D1(1), cuda.D1(2048), 0, []any{out}, "invalid launch configuration"},
		{"demo/demo_atomic_count", cuda.D1(1), cuda.D1(32), 1 << 20, []any{out}, "without opting in"},
		{"demo/demo_atomic_count", cuda.D1(1), cuda.D1(32), 0, []any{1.5}, "want DevicePtr, int32 or float32"},
	} {
		err := d.Launch(c.name, c.grid, c.block, c.shared, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Launch(%s, %v): error %v, want one containing %q", c.name, c.args, err, c.want)
		}
	}
	pin := pinned(t, d, 8)
	if err := d.CopyHtoDAsync(out+60, pin, 8); err == nil {
		t.Error("a copy running past the end of an allocation was accepted")
	}
	if err := d.CopyHtoDAsync(out, unsafe.Pointer(&[8]byte{}), 8); err == nil {
		t.Error("an async copy from pageable (Go) memory was accepted")
	}
}
