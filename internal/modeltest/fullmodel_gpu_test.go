//go:build cuda

package modeltest_test

import (
	"testing"

	"github.com/grpo-dev/grpo/internal/modeltest"
	"github.com/grpo-dev/grpo/kernels"
	_ "github.com/grpo-dev/grpo/kernels/cuda" // registers "cuda"
)

// TestFullModelOnGPU runs the full-model check on the real device: the
// tiny models' logits — every golden length, prefill and decode — and GRPO
// loss and LoRA gradients against the CPU backend and the PyTorch goldens.
// Needs a GPU and the repository's testdata (run from internal/modeltest,
// as scripts/gpu-check.sh does).
func TestFullModelOnGPU(t *testing.T) {
	b, err := kernels.Open("cuda")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := b.(interface{ Close() error }).Close(); err != nil {
			t.Error(err)
		}
	}()
	modeltest.Run(t, b, "../../testdata", modeltest.Options{MaxPrefill: 256, MaxDecode: 256})
}
