package emu_test

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	_ "github.com/grpo-dev/grpo/kernels/emu"
)

// TestOpensSeveralDevices: emu:1 opens another emulated device of its own
// (a data-parallel run opens several in one process), with its own memory.
func TestOpensSeveralDevices(t *testing.T) {
	a, err := kernels.OpenDevice(kernels.DeviceID{Backend: "emu", Index: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := kernels.OpenDevice(kernels.DeviceID{Backend: "emu", Index: 2})
	if err != nil {
		t.Fatal(err)
	}
	x, y := a.Alloc(kernels.F32, 4), b.Alloc(kernels.F32, 4)
	a.Upload(x, []float32{1, 2, 3, 4})
	b.Upload(y, []float32{5, 6, 7, 8})
	got := make([]float32, 4)
	a.Download(got, x)
	if err := a.Sync(); err != nil || got[0] != 1 || got[3] != 4 {
		t.Fatalf("device 1 reads %v, %v", got, err)
	}
}
