package model

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/emu"
)

// TestNemotronLoRAGradientsMatchPyTorchEmu is
// TestNemotronLoRAGradientsMatchPyTorch on the CUDA kernels under emu:
// the training forward's log-probs within 1e-4 and every all-linear LoRA
// gradient within NMSE 1e-6 of autograd's, through the Mamba-2 kernels
// (conv with bias, SSD scan, grouped gated norm), relu² and the sigmoid
// routing.
func TestNemotronLoRAGradientsMatchPyTorchEmu(t *testing.T) {
	checkNemotronLoRAGradEmu(t, "nemotron_h_lora_grad.json")
}

// TestNemotronLatentLoRAGradientsMatchPyTorchEmu is the same for the
// latent MoE (nemotron_h-latent-tiny): its latent projections and
// latent-wide experts on the CUDA kernels.
func TestNemotronLatentLoRAGradientsMatchPyTorchEmu(t *testing.T) {
	checkNemotronLoRAGradEmu(t, "nemotron_h_latent_lora_grad.json")
}

func checkNemotronLoRAGradEmu(t *testing.T, file string) {
	if testing.Short() {
		t.Skip("trains under the emulator")
	}
	var backends []*cuda.Backend
	defer func() {
		for _, b := range backends {
			b.Close()
		}
	}()
	checkLoRAGradGoldenOn(t, file, func() kernels.Backend {
		b := emu.New()
		backends = append(backends, b)
		return b
	})
}
