package modeltest_test

import (
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/internal/modeltest"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/emu"
)

// TestPlantedFullModel proves the full-model check can fail: with the
// planted kernels of kernels/emu swapped in, the logits check rejects
// attention that skips each token's own position, and the gradient check
// — whose logits stay right — rejects an attention backward without the
// softmax's −p·D term.
func TestPlantedFullModel(t *testing.T) {
	t.Run("attention off by one", func(t *testing.T) {
		d := emu.NewDevice()
		d.PlantAttentionOffByOne()
		b := cuda.New(d)
		defer b.Close()
		errs := modeltest.Collect(func(tb modeltest.TB) {
			modeltest.CheckLogits(tb, b, "../../testdata", "qwen3-tiny", modeltest.Options{MaxPrefill: 7, MaxDecode: 7})
		})
		expectCaught(t, errs, "against the CPU backend", "against PyTorch")
	})
	t.Run("attention backward without D", func(t *testing.T) {
		d := emu.NewDevice()
		d.PlantAttentionBackwardWithoutD()
		b := cuda.New(d)
		defer b.Close()
		errs := modeltest.Collect(func(tb modeltest.TB) {
			modeltest.CheckGrads(tb, b, "../../testdata", "llama-tiny")
		})
		expectCaught(t, errs, "gradient of model.layers.0.self_attn.q_proj.A: against the CPU backend")
	})
	// A bf16 model's trace runs the tensor-core backward (model's
	// traceAttention): its bf16 bounds still reject the planted one.
	t.Run("tensor-core attention backward without D", func(t *testing.T) {
		d := emu.NewDevice()
		d.PlantAttentionBackwardWithoutD()
		b := cuda.New(d)
		defer b.Close()
		errs := modeltest.Collect(func(tb modeltest.TB) {
			modeltest.CheckGrads(tb, b, "../../testdata", "qwen3-tiny-bf16")
		})
		expectCaught(t, errs, "self_attn.q_proj.A: against the CPU backend")
	})
}

func expectCaught(t *testing.T, errs []string, wants ...string) {
	t.Helper()
	if len(errs) == 0 {
		t.Fatal("the planted kernel passed the full-model check")
	}
	all := strings.Join(errs, "\n")
	for _, w := range wants {
		if !strings.Contains(all, w) {
			t.Errorf("no failure mentions %q; got:\n%.1500s", w, all)
		}
	}
	t.Logf("caught as expected (%d failures), first: %s", len(errs), errs[0])
}
