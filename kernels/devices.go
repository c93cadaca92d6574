package kernels

import (
	"slices"
	"strings"
)

// devices are the device names a run may ask for, each with the
// description its backend returns. They are known in every build, so a
// config naming "cuda" validates the same whether or not this binary has
// the cuda backend (Open then says how to get it), and an estimate can
// describe a device before, or without, opening it. The emu backend is
// not among them: it is the CUDA code under test on the CPU, registered
// for tests and benchmarks, not a device to train on. kerneltest checks
// that each backend's Describe agrees with its entry here.
var devices = []Description{
	{Name: "cpu", BF16Storage: F32, KVCache: F32},
	{Name: "cuda", GPU: true, BF16Storage: BF16, BF16GEMM: true, KVCache: BF16, Graphs: true},
}

// Devices lists the device names a run may ask for, in a fixed order.
func Devices() []string {
	names := make([]string, len(devices))
	for i, d := range devices {
		names[i] = d.Name
	}
	return names
}

// DescribeDevice returns the description of the named device's backend,
// whether or not this build has it (Available tells), or false for a name
// that is not a device.
func DescribeDevice(name string) (Description, bool) {
	name, _, _ = strings.Cut(name, ":") // "cuda:3" is a cuda device
	i := slices.IndexFunc(devices, func(d Description) bool { return d.Name == name })
	if i < 0 {
		return Description{}, false
	}
	return devices[i], true
}
