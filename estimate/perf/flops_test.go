package perf

import (
	"math"
	"testing"

	"github.com/grpo-dev/grpo/model"
)

// TestLinearFLOPsMatchParamCount checks the per-token GEMM work against
// the model package's own parameter count: every parameter but the norms
// (and a separate embedding table) is a matmul weight, 2 FLOPs each.
func TestLinearFLOPsMatchParamCount(t *testing.T) {
	for _, name := range []string{"qwen3-0.6b", "qwen3-4b", "qwen2.5-0.5b", "llama-3.2-1b"} {
		c, ok := model.Shape(name)
		if !ok {
			t.Fatalf("shape %s missing", name)
		}
		h := int64(c.HiddenSize)
		notMatmul := int64(c.NumLayers)*2*h + h // input and post-attention norms, final norm
		if c.Arch().QKNorm {
			notMatmul += int64(c.NumLayers) * 2 * int64(c.HeadDim)
		}
		if c.Arch().QKVBias || c.AttentionBias {
			notMatmul += int64(c.NumLayers) * int64(c.NumHeads+2*c.NumKVHeads) * int64(c.HeadDim)
		}
		if !c.TieWordEmbeddings {
			notMatmul += int64(c.VocabSize) * h // the embedding table, gathered
		}
		want := 2 * float64(c.ParamCount()-notMatmul)
		if got := LinearFLOPs(c); got != want {
			t.Errorf("%s: LinearFLOPs %.6g, want 2·(params − norms − biases) = %.6g", name, got, want)
		}
	}
}

// TestMoEFLOPsAndReads: Qwen3-30B-A3B's per-token work is its active
// parameters' (3.35B, less norms and the gathered embedding), and a
// decode step reads the dense weights plus the experts its batch routes
// to: at batch 1 eight of 128 per layer, at batch 256 all but ~1e-7 of
// them.
func TestMoEFLOPsAndReads(t *testing.T) {
	c, _ := model.Shape("qwen3-30b-a3b")
	h := int64(c.HiddenSize)
	notMatmul := int64(c.NumLayers)*(2*h+2*int64(c.HeadDim)) + h + int64(c.VocabSize)*h
	if got, want := LinearFLOPs(c), 2*float64(c.ActiveParamCount()-notMatmul); got != want {
		t.Errorf("LinearFLOPs %.6g, want 2·(active params − norms − embedding) = %.6g", got, want)
	}
	expert := float64(3 * 2048 * 768)
	dense := float64(c.ParamCount()) - 48*128*expert
	if got, want := ReadParams(c, 1), dense+48*8*expert; math.Abs(got-want) > 1 {
		t.Errorf("batch 1 reads %.6g weights, want %.6g", got, want)
	}
	if got := ReadParams(c, 256); math.Abs(got-float64(c.ParamCount())) > 1e-6*float64(c.ParamCount()) {
		t.Errorf("batch 256 reads %.6g weights, want about all %d", got, c.ParamCount())
	}
}
