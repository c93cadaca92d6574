package emu

import (
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
)

// TestPoolRecyclesWithoutDeviceCalls: a buffer freed and allocated again
// at the same size comes back from the backend's pool, zeroed by a memset
// on the stream: no cuMemAlloc, no cuMemFree and no host wait.
func TestPoolRecyclesWithoutDeviceCalls(t *testing.T) {
	b := New()
	defer b.Close()
	x := b.Alloc(kernels.F32, 1000)
	b.Upload(x, make([]float32, 1000))
	b.Fill(x, 3, 1000)
	b.Free(x)
	before := b.Counts()
	y := b.Alloc(kernels.F32, 1000)
	got := b.Counts().Sub(before)
	if got.Allocs != 0 || got.Frees != 0 || got.Syncs != 0 || got.Memsets != 1 {
		t.Fatalf("recycling a 1000-float buffer: %v; want 0 allocs, 0 frees, 0 syncs and 1 memset", got)
	}
	host := make([]float32, 1000)
	b.Download(host, y)
	for i, v := range host {
		if v != 0 {
			t.Fatalf("recycled buffer element %d = %v, want 0 (Alloc returns zeroed memory)", i, v)
		}
	}
	before = b.Counts()
	b.Free(y)
	if got := b.Counts().Sub(before); got.Frees != 0 || got.Syncs != 0 {
		t.Fatalf("Free: %v; want no cuMemFree and no wait", got)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
}

// TestStagingDoesNotWaitAfterADownload: once a download has waited for the
// device, the next uploads find free staging buffers and do not wait, and
// a Sync with nothing issued since does not wait either.
func TestStagingDoesNotWaitAfterADownload(t *testing.T) {
	b := New()
	defer b.Close()
	idx := b.Alloc(kernels.I32, 64)
	host := make([]int32, 64)
	for range 3 {
		b.UploadI32(idx, host)
	}
	b.DownloadI32(host, idx)
	before := b.Counts()
	for range 3 {
		b.UploadI32(idx, host)
		b.AddI32(idx, idx, idx, 64)
	}
	if got := b.Counts().Sub(before); got.Syncs != 0 {
		t.Fatalf("3 small uploads after a download: %v; want 0 syncs", got)
	}
	b.DownloadI32(host, idx)
	before = b.Counts()
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := b.Counts().Sub(before); got.Syncs != 0 {
		t.Fatalf("Sync right after a download: %v; want no second wait", got)
	}
}

// TestGraphReplaysCapturedWork captures x += y and replays it: the replay
// runs the kernel again on the buffers' current contents, as one graph
// launch and no host-issued kernel.
func TestGraphReplaysCapturedWork(t *testing.T) {
	b := New()
	defer b.Close()
	const n = 100
	x, y := b.Alloc(kernels.F32, n), b.Alloc(kernels.F32, n)
	b.Fill(y, 2, n)
	beforeCapture := b.Counts()
	if err := b.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	b.Add(x, x, y, n)
	g, err := b.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Counts().Sub(beforeCapture); got.Captures != 1 || got.Launches != 0 {
		t.Fatalf("one capture of x += y: %v, %d captures; want 1 capture and no launch", got, got.Captures)
	}
	host := make([]float32, n)
	b.Download(host, x)
	if host[0] != 0 {
		t.Fatalf("x[0] = %v after capture; the captured Add must not run until replayed", host[0])
	}
	before := b.Counts()
	for range 3 {
		b.Replay(g)
	}
	got := b.Counts().Sub(before)
	b.Download(host, x)
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if host[0] != 6 || host[n-1] != 6 {
		t.Fatalf("x after 3 replays of x += 2: %v … %v, want 6", host[0], host[n-1])
	}
	if got.GraphLaunches != 3 || got.GraphKernels != 3 || got.Launches != 0 {
		t.Fatalf("3 replays: %v; want 3 graph launches of 1 kernel each and no host launch", got)
	}
	b.FreeGraph(g)
}

// TestCaptureRefusesHostWork: an upload inside a capture spoils it, as a
// CUDA capture refuses work that touches host memory.
func TestCaptureRefusesHostWork(t *testing.T) {
	b := New()
	defer b.Close()
	x := b.Alloc(kernels.F32, 8)
	if err := b.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	b.Upload(x, make([]float32, 8))
	_, err := b.EndCapture()
	if err == nil || !strings.Contains(err.Error(), "during stream capture") {
		t.Fatalf("EndCapture after an upload in the capture: %v; want the refused call named", err)
	}
	if err := b.Sync(); err != nil {
		t.Fatalf("Sync after the spoiled capture: %v", err)
	}
}

// TestCaptureKeepsRootCause: when an op fails inside a capture (an Alloc,
// refused by the backend) and the device then refuses to end it (an
// upload spoiled it), EndCapture's error names the first failure as well
// as the device's, not the device's alone.
func TestCaptureKeepsRootCause(t *testing.T) {
	b := New()
	defer b.Close()
	x := b.Alloc(kernels.F32, 8)
	if err := b.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	b.Alloc(kernels.F32, 4)
	b.Upload(x, make([]float32, 8))
	_, err := b.EndCapture()
	if err == nil || !strings.Contains(err.Error(), "while capturing a graph: allocate every buffer") || !strings.Contains(err.Error(), "during stream capture") {
		t.Fatalf("EndCapture: %v; want the Alloc (the root cause) and the device's refusal both named", err)
	}
	if err := b.Sync(); err != nil {
		t.Fatalf("Sync after the spoiled capture: %v", err)
	}
}
