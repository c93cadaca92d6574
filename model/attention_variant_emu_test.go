package model

import (
	"math/rand/v2"
	"testing"

	"github.com/grpo-dev/grpo/kernels/emu"
)

// TestDecodeEqualsPrefillWithVariantsOnEmu is
// TestDecodeEqualsPrefillWithVariants on the CUDA kernels under the
// emulator: the prefill runs the flash kernel, each step the split-KV
// decode kernel, both over the bf16 paged cache; the bar allows the flash
// kernel's bf16 rounding of q and the probabilities on tensor cores —
// ten times below what the variants change.
func TestDecodeEqualsPrefillWithVariantsOnEmu(t *testing.T) {
	be := emu.New()
	defer be.Close()
	m := variantModel(be, 6, []int{3, 0}, randomSinks(rand.New(rand.NewPCG(1, 1))))
	defer m.Free()
	checkDecodeEqualsPrefill(t, m, 2e-3)
	plain := variantModel(be, 6, nil, nil)
	defer plain.Free()
	ids := randomIDs(rand.New(rand.NewPCG(9, 10)), 23, m.Config.VocabSize)
	v := m.Config.VocabSize
	if d := maxAbsDiff(logProbs(pagedLogits(t, m, ids), v), logProbs(pagedLogits(t, plain, ids), v)); d < 2e-2 {
		t.Errorf("the window and sinks change the log-probs by %g, too little for the bar of 2e-3 to tell", d)
	}
}

// TestVariantStaticDecodeStepOnEmu is the decode bar with a window of 3
// in layer 0 and sinks: 4 rows at positions 4..7 (windows starting past
// the prompt's first tokens), checkStaticDecodeGreedy's bar.
func TestVariantStaticDecodeStepOnEmu(t *testing.T) {
	be := emu.New()
	defer be.Close()
	m := variantModel(be, 6, []int{3, 0}, randomSinks(rand.New(rand.NewPCG(2, 2))))
	defer m.Free()
	checkStaticDecodeGreedy(t, be, m, 4, 4, 4)
}
