package model

import (
	"math/rand/v2"
	"testing"

	"github.com/grpo-dev/grpo/kernels/emu"
)

// TestHybridSharedPromptOnEmu is TestSharedPrefixMatchesUnshared's hybrid
// case on the CUDA backend under emu: the DeltaNet layers' two calls over
// row ranges of the batch (views at an offset) and the state gradients
// through the .cu kernels give the log-probs and LoRA gradients of each
// sequence computed alone.
func TestHybridSharedPromptOnEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("trains under the emulator")
	}
	be := emu.New()
	defer be.Close()
	m, err := Load("../testdata/models/qwen3_5-tiny", be)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	ad := newTestAdapter(m, 2, 9)
	m = m.WithAdapter(ad)
	rng := rand.New(rand.NewPCG(5, 6))
	// Prompts of 70 tokens: the prompts' call runs the chunked delta
	// rule (chunks of 64) and leaves its state mid-sequence.
	b, rows, targets, shares := groupBatch(rng, m.Config.VocabSize, 2, 3, 70)
	dlogp := make([]float32, len(rows))
	for i := range dlogp {
		dlogp[i] = float32(rng.NormFloat64())
	}
	alone := eachAlone(t, m, ad, b, rows, targets, dlogp)
	for _, s := range shares {
		b.Share(s[0], s[1], s[2])
	}
	shared := trainGrads(t, m, ad, b, rows, targets, dlogp)
	worst := 0.0
	for k := range alone.grads {
		e := nmse(shared.grads[k], alone.grads[k])
		if e > 1e-6 {
			t.Errorf("gradient %d: NMSE %g between the shared batch and each sequence alone", k, e)
		}
		worst = max(worst, e)
	}
	d := maxAbsDiff(alone.logp, shared.logp)
	if d > 1e-5 {
		t.Errorf("log-probs: max |Δ| %g between the shared batch and each sequence alone", d)
	}
	t.Logf("emu: log-probs max |Δ| %.3g; %d LoRA gradients, worst NMSE %.3g", d, len(alone.grads), worst)
}
