package emu

import (
	"strings"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
)

// callCounter is an emulated device that counts, independently of the
// backend's Counter, each kernel's launches by name and the event calls
// a profile makes; launches of slow are held back by slowFor, so their
// profiled time has a floor.
type callCounter struct {
	*Device
	launches                    map[string]int64
	timingEvents, records, outs int64
	slow                        string
	slowFor                     time.Duration
}

func newCallCounter() *callCounter {
	return &callCounter{Device: NewDevice(), launches: map[string]int64{}}
}

func (d *callCounter) Launch(name string, grid, block cuda.Dim3, shared int, args ...any) error {
	d.launches[name]++
	if name == d.slow {
		time.Sleep(d.slowFor)
	}
	return d.Device.Launch(name, grid, block, shared, args...)
}

func (d *callCounter) NewTimingEvent() (cuda.Event, error) {
	d.timingEvents++
	return d.Device.NewTimingEvent()
}

func (d *callCounter) Record(e cuda.Event) error {
	d.records++
	return d.Device.Record(e)
}

func (d *callCounter) Elapsed(s, e cuda.Event) (float64, error) {
	d.outs++
	return d.Device.Elapsed(s, e)
}

// profiledWork is a little of everything a profile times: uploads
// (staging, copy HtoD), f32→bf16 conversion, a bf16 GEMM, elementwise
// kernels, a recycled buffer's memset and a download.
func profiledWork(t *testing.T, b *cuda.Backend) {
	t.Helper()
	const m, n, k = 8, 12, 16
	a, w, c := b.Alloc(kernels.F32, m*k), b.Alloc(kernels.BF16, k*n), b.Alloc(kernels.F32, m*n)
	av, wv := make([]float32, m*k), make([]float32, k*n)
	for i := range av {
		av[i] = float32(i%7) - 3
	}
	for i := range wv {
		wv[i] = float32(i%5) - 2
	}
	b.Upload(a, av)
	b.Upload(w, wv)
	for range 3 {
		b.MatMul(c, a, w, m, n, k, false, false, 1, 0)
		b.Add(c, c, c, m*n)
		b.Fill(a, 1, m*k)
	}
	tmp := b.Alloc(kernels.F32, 256)
	b.Free(tmp)
	tmp = b.Alloc(kernels.F32, 256) // recycled: a memset
	got := make([]float32, m*n)
	b.Download(got, c)
	for _, x := range []kernels.Buffer{a, w, c, tmp} {
		b.Free(x)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
}

// TestProfileCountsEveryLaunch: a profile's entries are the kernels the
// device ran, by their real names (each one the PTX has figures for),
// with the launches an independent per-name count saw; its GEMM, memset
// and copy entries match the Counter's counts of the same work; every
// time is positive, their sum within the GPU span; and a kernel that
// takes at least 4 ms a launch is profiled at no less.
func TestProfileCountsEveryLaunch(t *testing.T) {
	d := newCallCounter()
	d.slow, d.slowFor = "add_f32", 4*time.Millisecond
	b := cuda.New(d)
	defer b.Close()
	profiledWork(t, b) // warm: staging buffers and pool exist
	clear(d.launches)
	before := b.Counts()
	if err := b.StartProfile(); err != nil {
		t.Fatal(err)
	}
	profiledWork(t, b)
	p, err := b.StopProfile()
	if err != nil {
		t.Fatal(err)
	}
	counts := b.Counts().Sub(before)
	t.Logf("profile: %d ops, kernels %.3f ms in a span of %.3f ms; counts %v", p.Launches(), p.KernelMs, p.SpanMs, counts)
	byKind := map[string]int64{}
	var sum float64
	for _, e := range p.Kernels {
		t.Logf("  %-40s %4d %9.3f ms", e.Name, e.Launches, e.Ms)
		if !(e.Ms > 0) || e.Launches < 1 {
			t.Errorf("%s: %d launches, %v ms; want both positive", e.Name, e.Launches, e.Ms)
		}
		sum += e.Ms
		switch {
		case strings.HasPrefix(e.Name, "gemm bf16 "), strings.HasPrefix(e.Name, "sgemm "):
			byKind["gemm"] += e.Launches
		case e.Name == "memset", e.Name == "copy HtoD", e.Name == "copy DtoH", e.Name == "copy DtoD":
			byKind[e.Name] += e.Launches
		default:
			if _, ok := cuda.Figures(e.Name); !ok {
				t.Errorf("entry %q is not a kernel of the PTX", e.Name)
			}
			if d.launches[e.Name] != e.Launches {
				t.Errorf("%s: %d launches profiled, the device ran %d", e.Name, e.Launches, d.launches[e.Name])
			}
			byKind["kernel"] += e.Launches
		}
	}
	if len(p.Kernels) != len(d.launches)+4 { // + the GEMM shape, memset, HtoD, DtoH
		t.Errorf("%d entries for %d kernels the device ran (%v)", len(p.Kernels), len(d.launches), d.launches)
	}
	want := map[string]int64{"kernel": counts.Launches, "gemm": counts.GEMMs, "memset": counts.Memsets, "copy HtoD": counts.HtoD, "copy DtoH": counts.DtoH}
	for k, n := range want {
		if byKind[k] != n || n == 0 {
			t.Errorf("%s: %d profiled, %d counted (want equal and nonzero)", k, byKind[k], n)
		}
	}
	if sum != p.KernelMs || !(p.KernelMs <= p.SpanMs) {
		t.Errorf("kernel ms %v (entries sum to %v), span %v: want the sum, within the span", p.KernelMs, sum, p.SpanMs)
	}
	for _, e := range p.Kernels {
		if e.Name == d.slow && e.Ms < 4*float64(e.Launches) {
			t.Errorf("%s: %d launches of at least 4 ms profiled at %.3f ms", e.Name, e.Launches, e.Ms)
		}
	}
	if p.Kernels[0].Name != d.slow {
		t.Errorf("the first entry is %s, want the slowest kernel, %s", p.Kernels[0].Name, d.slow)
	}
}

// TestProfileOffIsFree: with no profile open the device sees no timing
// event and no Record beyond the staging's, and the same work issues the
// same device calls and Counts whether or not a profile was open before
// it (a closed profile leaves nothing behind); a profile changes no
// Counts (its events bypass the Counter).
func TestProfileOffIsFree(t *testing.T) {
	run := func(profileBefore, profileDuring bool) (cuda.Counts, *callCounter) {
		d := newCallCounter()
		b := cuda.New(d)
		defer b.Close()
		profiledWork(t, b)
		if profileBefore {
			if err := b.StartProfile(); err != nil {
				t.Fatal(err)
			}
			profiledWork(t, b)
			if _, err := b.StopProfile(); err != nil {
				t.Fatal(err)
			}
		}
		before, ev, rec := b.Counts(), d.timingEvents, d.records
		if profileDuring {
			if err := b.StartProfile(); err != nil {
				t.Fatal(err)
			}
		}
		profiledWork(t, b)
		if profileDuring {
			if _, err := b.StopProfile(); err != nil {
				t.Fatal(err)
			}
		}
		c := b.Counts().Sub(before)
		d.timingEvents, d.records = d.timingEvents-ev, d.records-rec
		return c, d
	}
	never, dn := run(false, false)
	after, da := run(true, false)
	during, dd := run(false, true)
	if dn.timingEvents != 0 || dn.outs != 0 || da.timingEvents != 0 {
		t.Errorf("no profile open: %d and %d timing events, %d reads; want none", dn.timingEvents, da.timingEvents, dn.outs)
	}
	if never != after || dn.records != da.records {
		t.Errorf("after a closed profile: %v, %d records; never profiled: %v, %d records", after, da.records, never, dn.records)
	}
	if never != during {
		t.Errorf("profiled: %v; not: %v (a profile must not change Counts)", during, never)
	}
	if ops := during.Launches + during.GEMMs + during.Memsets + during.HtoD + during.DtoH; dd.records != dn.records+2*ops+1 {
		t.Errorf("profiled: %d records, want the %d unprofiled + 2 per op (%d) + the start mark", dd.records, dn.records, ops)
	}
}

// TestProfileGraphs: a capture inside a profile records, runs nothing and
// is counted Untimed; each replay is one entry naming the graph's
// kernels; the replayed result is the right one. A profile cannot start
// inside a capture, nor twice.
func TestProfileGraphs(t *testing.T) {
	b := New()
	defer b.Close()
	x := b.Alloc(kernels.F32, 64)
	b.Fill(x, 1, 64)
	if err := b.StartProfile(); err != nil {
		t.Fatal(err)
	}
	if err := b.StartProfile(); err == nil {
		t.Error("a second StartProfile while one is open: no error")
	}
	if err := b.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	b.Add(x, x, x, 64)
	b.Scale(x, 0.5, 64)
	if err := b.StartProfile(); err == nil {
		t.Error("StartProfile while capturing: no error")
	}
	g, err := b.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		b.Replay(g)
	}
	p, err := b.StopProfile()
	if err != nil {
		t.Fatal(err)
	}
	if p.Untimed != 2 || len(p.Kernels) != 1 || p.Kernels[0].Name != "graph (2 kernels)" || p.Kernels[0].Launches != 3 {
		t.Errorf("profile %+v: want 2 untimed ops and one entry, graph (2 kernels), of 3 launches", p)
	}
	got := make([]float32, 64)
	b.Download(got, x)
	if got[0] != 1 || got[63] != 1 {
		t.Errorf("x after 3 replays of x = (x+x)/2: %v, want 1", got[0])
	}
	b.FreeGraph(g)
	b.Free(x)
	if _, err := b.StopProfile(); err == nil {
		t.Error("StopProfile with none open: no error")
	}
}

// TestProfileManyOps: past the harvest interval the finished ops' events
// go back to the pool, so 3000 timed ops make about two intervals' worth
// of events, not 6000, and still count every launch.
func TestProfileManyOps(t *testing.T) {
	d := newCallCounter()
	b := cuda.New(d)
	defer b.Close()
	x := b.Alloc(kernels.F32, 32)
	if err := b.StartProfile(); err != nil {
		t.Fatal(err)
	}
	for range 3000 {
		b.Fill(x, 2, 32)
	}
	p, err := b.StopProfile()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Kernels) != 1 || p.Kernels[0].Launches != 3000 {
		t.Errorf("profile %+v: want fill_f32 × 3000", p.Kernels)
	}
	if d.timingEvents > 2*1024+3 {
		t.Errorf("%d timing events for 3000 ops; the pool should hold it to 2 × 1024 + 3", d.timingEvents)
	}
	b.Free(x)
}

// TestElapsedNeedsTimingAndDoneWork: the emulator's Elapsed refuses what
// cuEventElapsedTime refuses — an event made without timing, one never
// recorded, one whose queued copy has not run — and measures the host
// clock between two Records.
func TestElapsedNeedsTimingAndDoneWork(t *testing.T) {
	d := NewDevice()
	defer d.Close()
	plain, _ := d.NewEvent()
	s, _ := d.NewTimingEvent()
	e, _ := d.NewTimingEvent()
	if _, err := d.Elapsed(s, e); err == nil || !strings.Contains(err.Error(), "NOT_READY") {
		t.Errorf("never recorded: %v", err)
	}
	if err := d.Record(plain); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Elapsed(plain, plain); err == nil || !strings.Contains(err.Error(), "without timing") {
		t.Errorf("an event without timing: %v", err)
	}
	p, _ := d.Alloc(64)
	h, _ := d.HostAlloc(64)
	if err := d.Record(s); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	if err := d.CopyHtoDAsync(p, h, 64); err != nil {
		t.Fatal(err)
	}
	if err := d.Record(e); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Elapsed(s, e); err == nil || !strings.Contains(err.Error(), "NOT_READY") {
		t.Errorf("its copy still queued: %v", err)
	}
	if err := d.WaitEvent(e); err != nil {
		t.Fatal(err)
	}
	ms, err := d.Elapsed(s, e)
	if err != nil || ms < 2 {
		t.Errorf("after the wait: %v ms, %v; want at least the 2 ms slept", ms, err)
	}
}
