package cpu_test

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

func TestConformance(t *testing.T) {
	t.Run("gonum", func(t *testing.T) {
		kerneltest.Run(t, cpu.New(cpu.WithBLAS(cpu.BLASGonum)))
	})
	t.Run("openblas", func(t *testing.T) {
		if err := cpu.OpenBLASError(); err != nil {
			t.Skip(err)
		}
		b := cpu.New(cpu.WithBLAS(cpu.BLASOpenBLAS))
		if b.BLASName() != "openblas" {
			t.Fatalf("BLASName = %q with OpenBLAS loadable", b.BLASName())
		}
		kerneltest.Run(t, b)
	})
	// More workers than cores, and an odd count, so split points and
	// dynamic chunking differ from the default.
	t.Run("workers=3", func(t *testing.T) {
		kerneltest.Run(t, cpu.New(cpu.WithWorkers(3)))
	})
	// The subtests above use the default (widest) kernels; the plain-Go
	// fallback and each narrower instruction set run the suite too.
	eachKernels(t, func(t *testing.T, b *cpu.Backend) { kerneltest.Run(t, b) })
}

func TestTrainConformance(t *testing.T) {
	eachKernels(t, func(t *testing.T, b *cpu.Backend) { kerneltest.RunTrain(t, b) })
}

// eachKernels runs suite once per kernel path this build and CPU have
// (AvailableKernels), each as subtest "kernels=NAME".
func eachKernels(t *testing.T, suite func(*testing.T, *cpu.Backend)) {
	for _, k := range cpu.AvailableKernels() {
		t.Run("kernels="+string(k), func(t *testing.T) {
			b := cpu.New(cpu.WithKernels(k))
			if got := b.KernelsName(); got != string(k) {
				t.Fatalf("WithKernels(%s): KernelsName = %q", k, got)
			}
			suite(t, b)
		})
	}
}
