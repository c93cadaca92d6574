package model

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/emu"
)

// TestGLMLoRAGradientsMatchPyTorchEmu is TestGLMLoRAGradientsMatchPyTorch
// on the CUDA kernels under emu: the training forward's log-probs within
// 1e-4 and every all-linear LoRA gradient within NMSE 1e-6 of autograd's,
// the sparse layers' sigmoid routing (moe_route_sigmoid_f32 and its
// backward) included.
func TestGLMLoRAGradientsMatchPyTorchEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("trains under the emulator")
	}
	var backends []*cuda.Backend
	defer func() {
		for _, b := range backends {
			b.Close()
		}
	}()
	checkLoRAGradGoldenOn(t, "glm4_moe_lora_grad.json", func() kernels.Backend {
		b := emu.New()
		backends = append(backends, b)
		return b
	})
}
