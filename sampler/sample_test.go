package sampler

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels/cpu"
)

// TestNonFiniteLogitsFailTheStep: NaN in the final norm's weight makes
// every logit NaN; Run must stop with one line naming the value, the
// sequence and the token id (read back from the row the op flagged), not
// sample from it.
func TestNonFiniteLogitsFailTheStep(t *testing.T) {
	for name, bad := range map[string]float32{"NaN": float32(math.NaN()), "+Inf": float32(math.Inf(1))} {
		t.Run(name, func(t *testing.T) {
			m := tinyModel(t)
			w := cpu.Float32s(m.W.Norm)
			w[0] = bad
			if name == "+Inf" {
				// +Inf·x is ±Inf per token; a zero elsewhere keeps
				// Inf·0 = NaN out of the way for this check's message.
				for i := 1; i < len(w); i++ {
					w[i] = 0
				}
			}
			s := newSampler(t, m, nil, Config{Slots: 2, MaxLen: 32})
			_, err := s.Generate(context.Background(), prompts(2), []Params{DefaultParams(), DefaultParams()})
			if err == nil || !strings.Contains(err.Error(), "the model's logits hold") ||
				!strings.Contains(err.Error(), "sequence 0 of the batch, token id") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("want one line naming the bad logit, got %v", err)
			}
			t.Log(err)
		})
	}
}
