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
// seconds (the emulator runs a block's threads on one core). The rerun
// with the blocks scheduled in reverse is TestFullModelBlockOrder (-tags
// slow).
func TestFullModel(t *testing.T) {
	b := emu.New()
	defer b.Close()
	modeltest.Run(t, b, "../../testdata", modeltest.Options{MaxPrefill: 64, MaxDecode: 7})
}
