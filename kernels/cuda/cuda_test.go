//go:build cuda

package cuda

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

// TestConformanceOnGPU runs the conformance suites (forward and training
// ops) on the real device: the same kernels and Go code that kernels/emu
// checks on every `go test`, here on the GPU with cuBLAS. Needs a GPU
// (built with -tags cuda).
func TestConformanceOnGPU(t *testing.T) {
	d, err := openDriver(0)
	if err != nil {
		t.Fatal(err)
	}
	b := New(d)
	defer func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	}()
	t.Run("forward", func(t *testing.T) { kerneltest.Run(t, b) })
	t.Run("train", func(t *testing.T) { kerneltest.RunTrain(t, b) })
}
