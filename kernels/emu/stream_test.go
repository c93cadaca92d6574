package emu

import (
	"math"
	"strings"
	"testing"
	"unsafe"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

// TestAsyncCopiesWaitForEvents shows the emulated stream has the hazards
// of a real one, so the backend's staging is tested against them: a copy
// runs only once an event recorded after it is waited for (or a later
// stream operation needs it), and carries what the pinned buffer holds
// then.
func TestAsyncCopiesWaitForEvents(t *testing.T) {
	d := NewDevice()
	defer d.Close()
	dev, _ := d.Alloc(16)
	pin := pinned(t, d, 16)
	host := unsafe.Slice((*float32)(pin), 4)
	copy(host, []float32{1, 2, 3, 4})
	first, second := event(t, d), event(t, d)
	if err := d.CopyHtoDAsync(dev, pin, 16); err != nil {
		t.Fatal(err)
	}
	if err := d.Record(first); err != nil {
		t.Fatal(err)
	}
	// Refilling the buffer before the copy is known to be done: the copy
	// carries the new values, as a GPU's DMA may.
	copy(host, []float32{5, 6, 7, 8})
	if err := d.WaitEvent(first); err != nil {
		t.Fatal(err)
	}
	out := pinned(t, d, 16)
	got := unsafe.Slice((*float32)(out), 4)
	if err := d.CopyDtoHAsync(out, dev, 16); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(float64(got[0])) {
		t.Errorf("pinned memory read before its copy ran holds %v, want the NaN poison", got[0])
	}
	if err := d.HostFree(out); err == nil || !strings.Contains(err.Error(), "queued copy") {
		t.Errorf("HostFree of a buffer a queued copy writes: %v, want a refusal", err)
	}
	// Waiting for an event recorded before the copy does not run it.
	if err := d.WaitEvent(first); err != nil || !math.IsNaN(float64(got[0])) {
		t.Errorf("waiting for an earlier event ran a later copy (%v, err %v)", got[0], err)
	}
	if err := d.Record(second); err != nil {
		t.Fatal(err)
	}
	if err := d.WaitEvent(second); err != nil {
		t.Fatal(err)
	}
	for i, w := range []float32{5, 6, 7, 8} {
		if got[i] != w {
			t.Fatalf("after the copy: %v, want [5 6 7 8]", got)
		}
	}
	if err := d.HostFree(out); err != nil {
		t.Error(err)
	}
	if err := d.Record(cuda.Event(99)); err == nil {
		t.Error("Record of an unknown event was accepted")
	}
}

// TestStagedTransfers moves data through the backend's two staging
// buffers: sizes below, at and across the 16 MiB chunk (a 40 MB tensor is
// three chunks through alternating buffers), F32 and BF16, with the source
// slice reused as soon as Upload returns and the downloads interleaved.
func TestStagedTransfers(t *testing.T) {
	b := New()
	defer b.Close()
	for _, n := range []int{1, 1000, 4 << 20, 10_000_003} {
		src := make([]float32, n)
		for i := range src {
			src[i] = float32(i%65536) + 0.5 // exact in bf16 only below 256
		}
		x := b.Alloc(kernels.F32, n)
		y := b.Alloc(kernels.F32, n)
		h := b.Alloc(kernels.BF16, n)
		b.Upload(x, src)
		for i := range src {
			src[i] = -src[i] // the upload already holds its own copy
		}
		b.Upload(y, src)
		b.Upload(h, src)
		gx, gy, gh := make([]float32, n), make([]float32, n), make([]float32, n)
		b.Download(gx, x)
		b.Download(gy, y)
		b.Download(gh, h)
		if err := b.Sync(); err != nil {
			t.Fatal(err)
		}
		for i := range src {
			if gx[i] != -src[i] || gy[i] != src[i] {
				t.Fatalf("n=%d: element %d: got %v and %v, want %v and %v", n, i, gx[i], gy[i], -src[i], src[i])
			}
			if want := kerneltest.RoundBF16(src[i]); gh[i] != want {
				t.Fatalf("n=%d: bf16 element %d: got %v, want %v", n, i, gh[i], want)
			}
		}
		b.Free(x)
		b.Free(y)
		b.Free(h)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
}
