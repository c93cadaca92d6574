package model

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels/emu"
)

// TestHybridStaticDecodeStepCounts is the hybrid decode bar under emu: a
// qwen3_5-tiny decode step (three gated DeltaNet layers continuing their
// per-slot states in place, one gated attention layer over the paged
// bf16 cache) at batch 128, checkStaticDecodeGreedy's bar.
func TestHybridStaticDecodeStepCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes 128 sequences under the emulator (several seconds of CPU)")
	}
	checkStaticDecodeStepCounts(t, "qwen3_5-tiny")
}

// TestNemotronStaticDecodeStepCounts is the same bar for nemotron_h-tiny:
// three Mamba-2 layers (conv and SSM states continued in place, the scan
// a one-token run per slot), attention without RoPE, a relu² MoE layer
// with the sigmoid router and a relu² MLP, each one block behind one norm.
func TestNemotronStaticDecodeStepCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes 128 sequences under the emulator (several seconds of CPU)")
	}
	checkStaticDecodeStepCounts(t, "nemotron_h-tiny")
}

// TestNemotronLatentStaticDecodeStepCounts: the same with the latent MoE
// (nemotron_h-latent-tiny): fc1/fc2_latent_proj around the experts in the
// captured step.
func TestNemotronLatentStaticDecodeStepCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes 128 sequences under the emulator (several seconds of CPU)")
	}
	checkStaticDecodeStepCounts(t, "nemotron_h-latent-tiny")
}

// checkStaticDecodeStepCounts holds the tiny model name's decode step at
// batch 128 under emu to one graph launch after warm-up, no allocation,
// two waits, and to Forward's greedy tokens.
func checkStaticDecodeStepCounts(t *testing.T, name string) {
	be := emu.New()
	defer be.Close()
	m, err := Load("../testdata/models/"+name, be)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	checkStaticDecodeGreedy(t, be, m, 128, 2, 4)
}
