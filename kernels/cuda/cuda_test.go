//go:build cuda

package cuda

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

// TestConformanceOnGPU runs the conformance suites (forward, training and
// sampling ops) on the real device, and asks it for its free memory: the same kernels and Go code that kernels/emu
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
	t.Logf("cuBLAS: %s", CublasPath())
	t.Run("forward", func(t *testing.T) { kerneltest.Run(t, b) })
	t.Run("train", func(t *testing.T) { kerneltest.RunTrain(t, b) })
	t.Run("sample", func(t *testing.T) { kerneltest.RunSample(t, b) })
	free, total, err := b.MemInfo()
	if err != nil || free <= 0 || total < free {
		t.Errorf("MemInfo: free %d, total %d, %v", free, total, err)
	}
	t.Logf("device memory: %d MiB free of %d MiB", free>>20, total>>20)
}
