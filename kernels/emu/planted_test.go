package emu

import (
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

// TestPlantedOffByOneFailsConformance proves the suite catches a broken
// kernel: attention.cu compiled with GRPO_PLANT_OFF_BY_ONE (k_planted.cc)
// lets each token attend to positions before its own but not to itself.
// The same suite that passes the real kernel must reject it.
func TestPlantedOffByOneFailsConformance(t *testing.T) {
	d := NewDevice()
	d.Substitute("attention_f32", "planted/attention_f32")
	b := newBackend(d)
	defer b.Close()
	err := kerneltest.Check(b, "Attention")
	if err == nil {
		t.Fatal("attention with the causal diagonal dropped passed the conformance suite")
	}
	if !strings.Contains(err.Error(), "Attention/") {
		t.Fatalf("unexpected failure: %v", err)
	}
	t.Logf("caught as expected: %.200s", err)
}
