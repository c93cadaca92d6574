package emu

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels/cuda"
)

// The emulated CUDA graphs: between BeginCapture and EndCapture the
// stream's work is recorded as a list of closures instead of run, and
// LaunchGraph runs the list again. What a real capture refuses — anything
// that makes the host wait for the stream, allocates or frees memory, or
// copies between host and device — fails here too and spoils the capture,
// so code that passes under emu captures on a GPU.

// capture is the graph being recorded.
type capture struct {
	ops []func() error
	err error // the first refused call; EndCapture returns it
}

// record appends run to the open capture and reports true, or reports
// false when no capture is open (the caller runs the op now).
func (d *Device) record(run func() error) bool {
	if d.capturing == nil {
		return false
	}
	d.capturing.ops = append(d.capturing.ops, run)
	return true
}

// refuse fails a call that a stream capture does not allow, and spoils
// the capture (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED invalidates it).
func (d *Device) refuse(what string) error {
	if d.capturing == nil {
		return nil
	}
	err := fmt.Errorf("emu: %s during stream capture: not allowed in a CUDA graph (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)", what)
	if d.capturing.err == nil {
		d.capturing.err = err
	}
	return err
}

func (d *Device) BeginCapture() error {
	if d.capturing != nil {
		return fmt.Errorf("emu: BeginCapture while a capture is open (CUDA_ERROR_ILLEGAL_STATE)")
	}
	d.flush() // copies queued before the capture are not part of it
	d.capturing = &capture{}
	return nil
}

func (d *Device) EndCapture() (cuda.Graph, error) {
	c := d.capturing
	if c == nil {
		return 0, fmt.Errorf("emu: EndCapture without BeginCapture (CUDA_ERROR_ILLEGAL_STATE)")
	}
	d.capturing = nil
	if c.err != nil {
		return 0, fmt.Errorf("emu: the capture was invalidated: %w", c.err)
	}
	d.lastGraph++
	d.graphs[d.lastGraph] = c.ops
	return d.lastGraph, nil
}

// LaunchGraph replays the recorded ops in order; the first error stops
// the replay and is returned, as the GPU reports a faulting graph kernel.
func (d *Device) LaunchGraph(g cuda.Graph) error {
	ops, ok := d.graphs[g]
	if !ok {
		return fmt.Errorf("emu: LaunchGraph of graph %d, not one of this device's", g)
	}
	if err := d.refuse("LaunchGraph"); err != nil {
		return err
	}
	for i, op := range ops {
		if err := op(); err != nil {
			return fmt.Errorf("emu: graph %d, op %d of %d: %w", g, i+1, len(ops), err)
		}
	}
	return nil
}

func (d *Device) DestroyGraph(g cuda.Graph) error {
	if _, ok := d.graphs[g]; !ok {
		return fmt.Errorf("emu: DestroyGraph of graph %d, not one of this device's", g)
	}
	delete(d.graphs, g)
	return nil
}
