package cuda

import (
	"errors"
	"fmt"
	"unsafe"
)

// NullDevice is a Device that does no work and holds no device memory:
// Alloc hands out fresh addresses that point at nothing, copies,
// launches and GEMMs do nothing, a download fills its destination with
// zeros, and graphs record and replay nothing. Driven through a Backend
// (New(NewNullDevice())), the real code — a model's forward, the static
// decode step, its capture and replay — runs at any shape on any machine
// in host time only, and the backend's Counter tells what it would ask of
// a GPU: launches, graph nodes, allocations, syncs, copies and the bytes
// GEMMs read from weights. It is for counting only: every value computed
// is zero or garbage. Like a real capture, a capture refuses the calls
// that make the host wait or touch host memory.
type NullDevice struct {
	next      DevicePtr
	capturing bool
	spoiled   error // the first call a capture refused
	graphs    Graph // the last graph handed out
}

var _ Device = (*NullDevice)(nil)

// NewNullDevice returns a null device whose addresses start at 1 MiB.
func NewNullDevice() *NullDevice { return &NullDevice{next: 1 << 20} }

// refuse fails a call a stream capture does not allow and spoils the
// capture, as CUDA does.
func (d *NullDevice) refuse(what string) error {
	if !d.capturing {
		return nil
	}
	err := fmt.Errorf("null: %s during stream capture: not allowed in a CUDA graph", what)
	if d.spoiled == nil {
		d.spoiled = err
	}
	return err
}

func (d *NullDevice) Name() string { return "null" }
func (d *NullDevice) GPU() bool    { return false }

// Alloc hands out the next 256-byte-aligned range of a never-ending
// address space (a 64-bit one: a 16 GB model takes 2³⁴ of it).
func (d *NullDevice) Alloc(bytes int) (DevicePtr, error) {
	if err := d.refuse("Alloc"); err != nil {
		return 0, err
	}
	p := d.next
	d.next += DevicePtr((max(bytes, 1) + 255) &^ 255)
	return p, nil
}

func (d *NullDevice) Free(DevicePtr) error { return d.refuse("Free") }

// HostAlloc is real host memory: the backend's staging copies into it.
func (d *NullDevice) HostAlloc(bytes int) (unsafe.Pointer, error) {
	if err := d.refuse("HostAlloc"); err != nil {
		return nil, err
	}
	return unsafe.Pointer(&make([]byte, max(bytes, 1))[0]), nil
}

func (d *NullDevice) HostFree(unsafe.Pointer) error { return d.refuse("HostFree") }

func (d *NullDevice) CopyHtoDAsync(DevicePtr, unsafe.Pointer, int) error {
	return d.refuse("CopyHtoDAsync")
}

// CopyDtoHAsync writes zeros: the device holds nothing else.
func (d *NullDevice) CopyDtoHAsync(dst unsafe.Pointer, _ DevicePtr, bytes int) error {
	if err := d.refuse("CopyDtoHAsync"); err != nil {
		return err
	}
	clear(unsafe.Slice((*byte)(dst), bytes))
	return nil
}

func (d *NullDevice) CopyDtoD(DevicePtr, DevicePtr, int) error { return nil }
func (d *NullDevice) Memset(DevicePtr, int) error              { return nil }
func (d *NullDevice) SetMaxDynamicShared(string, int) error    { return nil }

// Launch checks the arguments' types, as both real devices do, and runs
// nothing.
func (d *NullDevice) Launch(name string, _, _ Dim3, _ int, args ...any) error {
	for i, a := range args {
		if _, err := ArgWord(a); err != nil {
			return fmt.Errorf("null: launching %s: argument %d: %w", name, i, err)
		}
	}
	return nil
}

func (d *NullDevice) Sgemm(bool, bool, int, int, int, float32, DevicePtr, int, DevicePtr, int, float32, DevicePtr, int) error {
	return nil
}

func (d *NullDevice) GemmBF16(bool, bool, int, int, int, float32, DevicePtr, int, DevicePtr, int, float32, DevicePtr, int) error {
	return nil
}

func (d *NullDevice) GemmBF16C(bool, bool, int, int, int, float32, DevicePtr, int, DevicePtr, int, float32, DevicePtr, int) error {
	return nil
}

func (d *NullDevice) NewEvent() (Event, error)       { return 1, nil }
func (d *NullDevice) Record(Event) error             { return nil }
func (d *NullDevice) WaitEvent(Event) error          { return d.refuse("WaitEvent") }
func (d *NullDevice) EventDone(Event) (bool, error)  { return true, nil }
func (d *NullDevice) DestroyEvent(Event) error       { return nil }
func (d *NullDevice) NewTimingEvent() (Event, error) { return 1, nil }

// Elapsed is 0: nothing ran between any two events.
func (d *NullDevice) Elapsed(Event, Event) (float64, error) { return 0, nil }

func (d *NullDevice) BeginCapture() error {
	if d.capturing {
		return errors.New("null: BeginCapture while a capture is open")
	}
	d.capturing, d.spoiled = true, nil
	return nil
}

// EndCapture returns a fresh graph handle, or the first call the capture
// refused.
func (d *NullDevice) EndCapture() (Graph, error) {
	if !d.capturing {
		return 0, errors.New("null: EndCapture without BeginCapture")
	}
	d.capturing = false
	if d.spoiled != nil {
		return 0, d.spoiled
	}
	d.graphs++
	return d.graphs, nil
}

func (d *NullDevice) LaunchGraph(g Graph) error {
	if g == 0 || g > d.graphs {
		return fmt.Errorf("null: LaunchGraph of graph %d, never captured", g)
	}
	return nil
}

func (d *NullDevice) DestroyGraph(Graph) error { return nil }
func (d *NullDevice) Sync() error              { return d.refuse("Sync") }
func (d *NullDevice) Close() error             { return nil }
