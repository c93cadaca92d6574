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
	be := emu.New()
	defer be.Close()
	m, err := Load("../testdata/models/qwen3_5-tiny", be)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	checkStaticDecodeGreedy(t, be, m, 128, 2, 4)
}
