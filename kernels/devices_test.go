package kernels

import (
	"slices"
	"testing"
)

// TestDevices: the device names are known without their backends (this
// test binary registers none), and emu, a test backend, is not one.
func TestDevices(t *testing.T) {
	if got := Devices(); !slices.Equal(got, []string{"cpu", "cuda"}) {
		t.Errorf("Devices() = %v", got)
	}
	if d, ok := DescribeDevice("cuda"); !ok || !d.GPU || d.Storage(BF16) != BF16 || !d.BF16GEMM {
		t.Errorf("cuda: %+v %v", d, ok)
	}
	if d, ok := DescribeDevice("cpu"); !ok || d.GPU || d.Storage(BF16) != F32 || d.Storage(I32) != I32 {
		t.Errorf("cpu: %+v %v", d, ok)
	}
	for _, name := range []string{"emu", "tpu", ""} {
		if _, ok := DescribeDevice(name); ok {
			t.Errorf("%q is a device", name)
		}
	}
}
