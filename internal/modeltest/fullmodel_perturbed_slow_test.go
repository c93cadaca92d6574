//go:build slow

// The full-model check again under perturbed math: slow (20 s), so CI runs
// it with -tags slow and `go test ./...` does not.

package modeltest_test

import (
	"testing"

	"github.com/grpo-dev/grpo/internal/modeltest"
	"github.com/grpo-dev/grpo/kernels/emu"
)

// TestFullModelPerturbedMath runs the full-model check with
// expf/logf/rsqrtf 2 ulp off, as the GPU's may be: its tolerances must not
// depend on glibc's accuracy (kernels/emu's TestPerturbedMath does the same
// for the conformance suites).
func TestFullModelPerturbedMath(t *testing.T) {
	defer emu.SetMathULPs(emu.SetMathULPs(emu.GPUMathULPs))
	b := emu.New()
	defer b.Close()
	modeltest.Run(t, b, "../../testdata", modeltest.Options{MaxPrefill: 64, MaxDecode: 7})
}
