//go:build slow

// The full-model check with every LoRA gradient rerun in reverse block
// order: slow, so CI runs it with -tags slow and `go test ./...` does not.

package modeltest_test

import (
	"testing"

	"github.com/grpo-dev/grpo/internal/modeltest"
	"github.com/grpo-dev/grpo/kernels/emu"
)

// TestFullModelBlockOrder is TestFullModel with every LoRA gradient
// required bit-identical on a second run with the blocks scheduled in
// reverse (issue 18: no atomics in the attention backward, no
// order-dependent sums anywhere).
func TestFullModelBlockOrder(t *testing.T) {
	b := emu.New()
	defer b.Close()
	reorder := func() func() {
		old := emu.SetBlockOrder(emu.Reverse)
		return func() { emu.SetBlockOrder(old) }
	}
	modeltest.Run(t, b, "../../testdata", modeltest.Options{MaxPrefill: 64, MaxDecode: 7, Reorder: reorder})
}
