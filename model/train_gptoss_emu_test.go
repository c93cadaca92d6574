package model

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels/emu"
)

// TestGptOssLoRAGradientsMatchPyTorchEmu is TestGptOssLoRAGradientsMatchPyTorch
// on the CUDA kernels under emu: log-probs within 1e-4 and every attention
// and expert LoRA gradient within NMSE 1e-6 of autograd's, through
// clamped_swiglu_f32, grouped_add_bias_f32 and their backward.
func TestGptOssLoRAGradientsMatchPyTorchEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("trains under the emulator")
	}
	b := emu.New()
	defer b.Close()
	checkGptOssLoRAGrad(t, b)
}
