package model

import (
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model/safetensors"
)

// TestLoadQwen35Checkpoints loads the tiny Qwen3.5 checkpoints in their
// published layout: nested config, model.language_model.* names, vision
// and MTP tensors skipped (and said so), zero-centred norms stored as
// 1 + w, A_log kept f32 beside bf16 weights, and fused and per-expert
// MoE tensors giving the same stacked weights.
func TestLoadQwen35Checkpoints(t *testing.T) {
	be := cpu.New()
	load := func(name string) *Model {
		t.Helper()
		m, err := Load("../testdata/models/"+name, be)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(m.Free)
		return m
	}
	dense := load("qwen3_5-tiny")
	if !strings.Contains(dense.Skipped, "vision tower tensors (model.visual.*)") || !strings.Contains(dense.Skipped, "multi-token-prediction tensors (mtp.*)") {
		t.Errorf("Skipped = %q, want the vision and MTP tensors named", dense.Skipped)
	}
	if dense.W.Layers[0].Linear == nil || dense.W.Layers[3].Linear != nil || dense.W.Layers[3].QKV == nil {
		t.Fatal("layers 0-2 should be DeltaNet, layer 3 attention")
	}
	// The stored input norm is 1 + the checkpoint's value.
	set, err := safetensors.OpenDir("../testdata/models/qwen3_5-tiny")
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	raw, _ := set.Tensor("model.language_model.layers.1.input_layernorm.weight")
	want, _ := raw.Float32s()
	got := download(be, dense.W.Layers[1].InputNorm)
	for i := range want {
		if got[i] != want[i]+1 {
			t.Fatalf("input norm[%d] = %v, want 1 + %v", i, got[i], want[i])
		}
	}
	// The gated norm is ones-initialised, not zero-centred: as stored.
	raw, _ = set.Tensor("model.language_model.layers.0.linear_attn.norm.weight")
	want, _ = raw.Float32s()
	got = download(be, dense.W.Layers[0].Linear.Norm)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("gated norm[%d] = %v, want %v", i, got[i], want[i])
		}
	}

	bf := load("qwen3_5-tiny-bf16")
	if bf.W.Layers[0].Linear.InProj.DType() != kernels.BF16 && be.Describe().Storage(kernels.BF16) == kernels.BF16 {
		t.Error("bf16 in_proj weights should stay bf16")
	}
	if bf.W.LMHead == bf.W.Embed {
		t.Error("qwen3_5-tiny-bf16 has an untied head")
	}

	fused, per := load("qwen3_5-moe-tiny"), load("qwen3_5-moe-tiny-perexpert")
	for l := range fused.W.Layers {
		a, b := fused.W.Layers[l].MoE, per.W.Layers[l].MoE
		for _, p := range [][2]kernels.Buffer{{a.GateUp, b.GateUp}, {a.Down, b.Down}, {a.Experts[3].Up, b.Experts[3].Up}} {
			x, y := download(be, p[0]), download(be, p[1])
			for i := range x {
				if x[i] != y[i] {
					t.Fatalf("layer %d: fused and per-expert weights differ at %d", l, i)
				}
			}
		}
	}
}

func download(be kernels.Backend, b kernels.Buffer) []float32 {
	out := make([]float32, b.Len())
	be.Download(out, b)
	return out
}
