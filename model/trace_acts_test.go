package model

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
)

// TestBF16Layers pins which layers of each tiny model keep their
// activations between ops in bf16 in a bf16 trace (trace_acts.go): the
// layers of attention, a DeltaNet or a Mamba-2 mixer with a dense SwiGLU
// or relu² MLP, an MoE (latent too) or none, gpt-oss's (sinks, o_proj
// bias), and none in an f32 trace;
// with the shared q/k/v output bf16 only when every layer is.
func TestBF16Layers(t *testing.T) {
	for _, c := range []struct {
		name  string
		bf16  []int // the bf16 layers in a bf16 trace
		fused kernels.DType
	}{
		{"qwen3-tiny-bf16", []int{0, 1}, kernels.BF16},
		{"llama-tiny", []int{0, 1}, kernels.BF16},
		{"qwen2-tiny", []int{0, 1}, kernels.BF16},
		{"qwen3_5-tiny-bf16", []int{0, 1, 2, 3}, kernels.BF16},
		{"qwen3-moe-tiny-bf16", []int{0, 1}, kernels.BF16},
		{"qwen3_5-moe-tiny", []int{0, 1, 2, 3}, kernels.BF16},
		{"glm4_moe-tiny", []int{0, 1, 2}, kernels.BF16},
		{"gpt_oss-tiny-bf16", []int{0, 1}, kernels.BF16},
		{"nemotron_h-tiny", []int{0, 1, 2, 3, 4, 5}, kernels.BF16},
		{"nemotron_h-latent-tiny", []int{0, 1, 2, 3, 4, 5}, kernels.BF16},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := LoadConfig(filepath.Join("..", "testdata", "models", c.name))
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for l := range cfg.NumLayers {
				if cfg.isBF16Layer(l, kernels.BF16) {
					got = append(got, l)
				}
				if cfg.isBF16Layer(l, kernels.F32) {
					t.Errorf("layer %d is a bf16 layer of an f32 trace", l)
				}
			}
			if !slices.Equal(got, c.bf16) {
				t.Errorf("bf16 layers %v, want %v", got, c.bf16)
			}
			if d := cfg.fusedDType(kernels.BF16); d != c.fused {
				t.Errorf("the shared q/k/v output is %v, want %v", d, c.fused)
			}
			if got := cfg.bf16Trace(kernels.BF16); got != (len(c.bf16) > 0) {
				t.Errorf("bf16Trace %v with bf16 layers %v", got, c.bf16)
			}
		})
	}
}

// TestInBF16RewritesSpecs: a bf16 layer's specs (inBF16) change the
// listed buffers' dtype and replace each swapped f32 output by its bf16
// copy, at the same size, and leave the others as they were.
func TestInBF16RewritesSpecs(t *testing.T) {
	var s layerActs
	var b bufSpecs
	b.f32(&s.h1, 10)
	b.f32(&s.gateUp, 20)
	b.f32(&s.rstd1, 5)
	got := b.inBF16(bf16Acts{bufs: []*kernels.Buffer{&s.gateUp}, swaps: [][2]*kernels.Buffer{{&s.h1, &s.h1b}}})
	want := bufSpecs{{&s.h1b, kernels.BF16, 10}, {&s.gateUp, kernels.BF16, 20}, {&s.rstd1, kernels.F32, 5}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if b[0].dst != &s.h1 || b[1].dt != kernels.F32 {
		t.Error("inBF16 changed the specs it read")
	}
}
