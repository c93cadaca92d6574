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
}
