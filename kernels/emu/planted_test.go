package emu

import (
	"fmt"
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
	d.PlantAttentionOffByOne()
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

// TestPlantedNoDeltaFailsTrainConformance proves the training suite
// catches a broken backward kernel: attention_backward.cu compiled with
// GRPO_PLANT_NO_DELTA (k_planted_train.cc) computes ds = p·dp, dropping
// the −p·D term of the softmax Jacobian. dv is still right, dq and dk are
// not, and both the reference and the finite-difference cases must say so.
func TestPlantedNoDeltaFailsTrainConformance(t *testing.T) {
	d := NewDevice()
	d.PlantAttentionBackwardWithoutD()
	b := newBackend(d)
	defer b.Close()
	err := kerneltest.CheckTrain(b, "AttentionBackward")
	if err == nil {
		t.Fatal("attention backward without the D term passed the training suite")
	}
	msg := err.Error()
	for _, want := range []string{"AttentionBackward/prefill-gqa1", "AttentionBackward/fd,packed-gqa2"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the planted bug was not caught by %s:\n%.2000s", want, msg)
		}
	}
	t.Logf("caught as expected: %.300s", msg)
}

// TestPlantedWrongPrefixRowFailsConformance proves the shared-prefix
// cases catch a prefix pass that reads a group's shared blocks through
// the wrong row's block table: attention_decode.cu compiled with
// GRPO_PLANT_WRONG_PREFIX_ROW (k_planted_prefix.cc) reads every group's
// prompt through the first token's row.
func TestPlantedWrongPrefixRowFailsConformance(t *testing.T) {
	d := NewDevice()
	for _, kv := range []string{"bf16", "f32"} {
		for dpl := 1; dpl <= 4; dpl++ {
			n := fmt.Sprintf("attention_prefix_dpl%d_%s", dpl, kv)
			d.Substitute(n, "planted/"+n)
		}
	}
	b := newBackend(d)
	defer b.Close()
	err := kerneltest.Check(b, "AttentionSharedPrefix")
	if err == nil {
		t.Fatal("a prefix pass reading the wrong row's blocks passed the conformance suite")
	}
	for _, want := range []string{"g4-g3-alone-gqa2,kv=f32", "g8-g2-gqa1,kv=bf16", "g3-g6-gqa12,kv=f32"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the planted bug was not caught by %s:\n%.1500s", want, err)
		}
	}
	t.Logf("caught as expected: %.200s", err)
}
