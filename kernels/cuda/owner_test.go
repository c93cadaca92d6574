package cuda

import (
	"errors"
	"fmt"
	"testing"
	"unsafe"

	"github.com/grpo-dev/grpo/kernels"
)

// nullDevice is a Device that does no device work but issues it the way
// the driver device does: arguments marshalled into 8-byte slots and each
// call handed to the owner thread, queued (batched) or waited for (do). It
// measures the host's cost per op of the backend and the hop.
type nullDevice struct {
	owner *ownerThread
	batch bool // queue launches (the driver's way) rather than hop per call
	next  DevicePtr
	ran   int // launches the owner ran
}

func newNullDevice(t testing.TB, batch bool) *nullDevice {
	o, err := startOwner(func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	return &nullDevice{owner: o, batch: batch, next: 1 << 20}
}

func (d *nullDevice) Name() string { return "null" }
func (d *nullDevice) GPU() bool    { return false }
func (d *nullDevice) Alloc(bytes int) (DevicePtr, error) {
	p := d.next
	d.next += DevicePtr((bytes + 255) &^ 255)
	return p, nil
}
func (d *nullDevice) Free(DevicePtr) error { return nil }
func (d *nullDevice) HostAlloc(bytes int) (unsafe.Pointer, error) {
	return unsafe.Pointer(&make([]byte, bytes)[0]), nil
}
func (d *nullDevice) HostFree(unsafe.Pointer) error                      { return nil }
func (d *nullDevice) CopyHtoDAsync(DevicePtr, unsafe.Pointer, int) error { return nil }
func (d *nullDevice) CopyDtoHAsync(unsafe.Pointer, DevicePtr, int) error { return nil }
func (d *nullDevice) CopyDtoD(DevicePtr, DevicePtr, int) error           { return nil }
func (d *nullDevice) Memset(DevicePtr, int) error                        { return nil }
func (d *nullDevice) SetMaxDynamicShared(string, int) error              { return nil }
func (d *nullDevice) Sgemm(bool, bool, int, int, int, float32, DevicePtr, int, DevicePtr, int, float32, DevicePtr, int) error {
	return nil
}
func (d *nullDevice) GemmBF16(bool, bool, int, int, int, float32, DevicePtr, int, DevicePtr, int, float32, DevicePtr, int) error {
	return nil
}
func (d *nullDevice) GemmBF16C(bool, bool, int, int, int, float32, DevicePtr, int, DevicePtr, int, float32, DevicePtr, int) error {
	return nil
}
func (d *nullDevice) NewEvent() (Event, error)              { return 1, nil }
func (d *nullDevice) Record(Event) error                    { return nil }
func (d *nullDevice) WaitEvent(Event) error                 { return d.owner.do(func() error { return nil }) }
func (d *nullDevice) EventDone(Event) (bool, error)         { return true, nil }
func (d *nullDevice) DestroyEvent(Event) error              { return nil }
func (d *nullDevice) NewTimingEvent() (Event, error)        { return 1, nil }
func (d *nullDevice) Elapsed(Event, Event) (float64, error) { return 0, nil }
func (d *nullDevice) BeginCapture() error                   { return errors.New("null device: no graphs") }
func (d *nullDevice) EndCapture() (Graph, error)            { return 0, errors.New("null device: no graphs") }
func (d *nullDevice) LaunchGraph(Graph) error               { return errors.New("null device: no graphs") }
func (d *nullDevice) DestroyGraph(Graph) error              { return nil }
func (d *nullDevice) Sync() error                           { return d.owner.do(func() error { return nil }) }
func (d *nullDevice) Close() error                          { return d.owner.stop() }

func (d *nullDevice) Launch(name string, grid, block Dim3, shared int, args ...any) error {
	slots := make([]uint64, len(args))
	params := make([]unsafe.Pointer, len(args))
	for i, a := range args {
		w, err := ArgWord(a)
		if err != nil {
			return fmt.Errorf("null: launching %s: argument %d: %w", name, i, err)
		}
		slots[i] = w
		params[i] = unsafe.Pointer(&slots[i])
	}
	f := func() error {
		if len(params) != len(args) {
			return errors.New("lost parameters")
		}
		d.ran++
		return nil
	}
	if d.batch {
		return d.owner.queue(f)
	}
	return d.owner.do(f)
}

// TestOwnerThreadRunsEveryQueuedLaunch: batched launches all run, in
// order, by the time a synchronising call returns.
func TestOwnerThreadRunsEveryQueuedLaunch(t *testing.T) {
	d := newNullDevice(t, true)
	b := New(d)
	x := b.Alloc(kernels.F32, 64)
	for range 3*maxBatch + 5 {
		b.Add(x, x, x, 64)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if d.ran != 3*maxBatch+5 {
		t.Fatalf("%d launches ran, want %d", d.ran, 3*maxBatch+5)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkLaunchHostCost is the host time of one op (Backend.Add: operand
// checks, launch bounds, counting, argument marshalling) on the null
// device, with launches batched to the owner thread as the driver device
// does ("batched") and with one hop per launch, as before ("hop"). The
// issue's bar: ≤ 2 µs per op without graphs.
//
//	go test ./kernels/cuda/ -run '^$' -bench LaunchHostCost -benchtime 200000x
func BenchmarkLaunchHostCost(b *testing.B) {
	for _, batch := range []bool{true, false} {
		name := "hop"
		if batch {
			name = "batched"
		}
		b.Run(name, func(b *testing.B) {
			d := newNullDevice(b, batch)
			be := New(d)
			defer be.Close()
			x := be.Alloc(kernels.F32, 1024)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				be.Add(x, x, x, 1024)
			}
			if err := be.Sync(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// TestArgWordMatchesArgBytes: the driver's allocation-free marshalling
// gives the bytes emu's does.
func TestArgWordMatchesArgBytes(t *testing.T) {
	for _, a := range []any{DevicePtr(0x1234_5678_9abc), int32(-7), float32(-1.5), float32(3e38)} {
		w, err := ArgWord(a)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := ArgBytes(a)
		var want uint64
		for j, c := range b {
			want |= uint64(c) << (8 * j)
		}
		if w != want {
			t.Errorf("ArgWord(%T %v) = %#x, ArgBytes gives %#x", a, a, w, want)
		}
	}
	if _, err := ArgWord(7); err == nil {
		t.Error("ArgWord(int) must fail: kernels take int32")
	}
}
