package modeltest_test

import (
	"testing"

	"github.com/grpo-dev/grpo/internal/modeltest"
	"github.com/grpo-dev/grpo/kernels/emu"
)

// TestFullModel runs the tiny models on the emulated device — every kernel
// of kernels/cuda composed into the real forward, training forward and
// backward — against the CPU backend and the PyTorch goldens. The golden
// logit cases of up to 64 tokens, decode up to 7 tokens, keep it within
// seconds (the emulator runs a block's threads on one core).
func TestFullModel(t *testing.T) {
	b := emu.New()
	defer b.Close()
	// Every LoRA gradient must come out bit-identical on a second run and
	// with the blocks scheduled in reverse (issue 18: no atomics in the
	// attention backward, no order-dependent sums anywhere).
	reorder := func() func() {
		old := emu.SetBlockOrder(emu.Reverse)
		return func() { emu.SetBlockOrder(old) }
	}
	modeltest.Run(t, b, "../../testdata", modeltest.Options{MaxPrefill: 64, MaxDecode: 7, Reorder: reorder})
}
