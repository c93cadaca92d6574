//go:build slow

// The conformance suites again under perturbed math: slow (14 s), so CI runs
// it with -tags slow and `go test ./...` does not.

package emu

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

// TestPerturbedMath runs the conformance suites (forward, training,
// sampling) with expf/logf/rsqrtf 2 ulp off, as the GPU's may be: their
// tolerances must not depend on glibc's accuracy. (The full-model check
// runs so in internal/modeltest: TestFullModelPerturbedMath.)
func TestPerturbedMath(t *testing.T) {
	defer SetMathULPs(SetMathULPs(GPUMathULPs))
	b := New()
	defer b.Close()
	t.Run("forward", func(t *testing.T) { kerneltest.Run(t, b) })
	t.Run("train", func(t *testing.T) { kerneltest.RunTrain(t, b) })
	t.Run("sample", func(t *testing.T) { kerneltest.RunSample(t, b) })
}
