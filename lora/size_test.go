package lora

import (
	"testing"

	"github.com/grpo-dev/grpo/model"
)

// TestParamCountMatchesNew: the count reported before allocation is the
// adapter New allocates, on a dense model and on a mixture of experts
// with its experts and routers adapted.
func TestParamCountMatchesNew(t *testing.T) {
	for _, tc := range []struct {
		model string
		cfg   Config
	}{
		{"qwen3-tiny", Config{Rank: 4, Alpha: 8, TargetModules: AllModules}},
		{"qwen3-tiny", Config{Rank: 3, Alpha: 8, TargetModules: []string{"v_proj", "q_proj"}}},
		{"qwen3-moe-tiny-dense", Config{Rank: 4, Alpha: 8, TargetModules: AllModules}},
		{"qwen3-moe-tiny-dense", Config{Rank: 2, Alpha: 8, TargetModules: []string{"gate", "up_proj", "k_proj"}}},
		{"qwen3-moe-tiny-dense", Config{Rank: 2, Alpha: 8, TargetModules: []string{AllLinear}}},
		{"qwen3_5-tiny", Config{Rank: 4, Alpha: 8, TargetModules: []string{AllLinear}}},
		{"qwen3_5-tiny", Config{Rank: 3, Alpha: 8, TargetModules: []string{"in_proj_b", "q_proj", "down_proj"}}},
		{"qwen3_5-moe-tiny", Config{Rank: 4, Alpha: 8, TargetModules: []string{AllLinear}}},
		{"qwen3_5-moe-tiny", Config{Rank: 2, Alpha: 8, TargetModules: AllModules}},
		{"qwen3_5-moe-tiny", Config{Rank: 2, Alpha: 8, TargetModules: []string{"shared_expert_gate", "out_proj"}}},
	} {
		m := loadModel(t, tc.model)
		a, err := New(m, tc.cfg, 1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tc.cfg.ParamCount(m.Config)
		if err != nil || got != int64(a.NumParams()) {
			t.Errorf("%s %v: ParamCount %d (%v), New allocated %d", tc.model, tc.cfg.TargetModules, got, err, a.NumParams())
		}
		a.Free()
	}
}

// TestParamCountQwen35: the trainable parameters of the real Qwen3.5 /
// Qwen3.6 shapes, counted by hand: rank × (in + out) per adapted
// projection, each only in the layers that have it (every fourth layer
// full attention, the others gated DeltaNet).
func TestParamCountQwen35(t *testing.T) {
	// qwen3.5-4b: hidden 2560, 16 heads × 256 (q_proj doubled by the
	// output gate: 8192), 4 KV heads (1024), DeltaNet q|k|v 2·2048+4096 =
	// 8192, z 4096, b and a 32 heads, MLP 9216; 8 attention, 24 DeltaNet
	// layers.
	attn4b := (2560 + 8192) + 2*(2560+1024) + (4096 + 2560)
	delta4b := (2560 + 8192) + (2560 + 4096) + 2*(2560+32) + (4096 + 2560)
	mlp4b := 3 * (2560 + 9216)
	// qwen3.6-35b-a3b: hidden 2048, q_proj 8192, 2 KV heads (512), o_proj
	// from 4096, the same DeltaNet; 256 experts and a shared expert of
	// 512, its gate hidden → 1; 10 attention, 30 DeltaNet layers.
	attn35 := (2048 + 8192) + 2*(2048+512) + (4096 + 2048)
	delta35 := (2048 + 8192) + (2048 + 4096) + 2*(2048+32) + (4096 + 2048)
	shared35 := 3*(2048+512) + (2048 + 1)
	experts35 := 256 * 3 * (2048 + 512)
	for _, tc := range []struct {
		shape   string
		targets []string
		rank    int
		want    int
	}{
		{"qwen3.5-4b", []string{AllLinear}, 16, 16 * (8*attn4b + 24*delta4b + 32*mlp4b)},
		{"qwen3.5-4b", []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "out_proj"}, 16, 16 * (8*attn4b + 24*delta4b + 32*mlp4b)},
		{"qwen3.5-4b", AllModules, 8, 8 * (8*attn4b + 32*mlp4b)},
		{"qwen3.6-35b-a3b", []string{AllLinear}, 8, 8 * (10*attn35 + 30*delta35 + 40*shared35)},
		// The MLP names adapt every routed expert and the shared expert.
		{"qwen3.6-35b-a3b", AllModules, 4, 4 * (10*attn35 + 40*(experts35+shared35-(2048+1)))},
		{"qwen3.6-35b-a3b", []string{"shared_expert_gate"}, 2, 2 * 40 * (2048 + 1)},
	} {
		mc, ok := model.Shape(tc.shape)
		if !ok {
			t.Fatalf("no shape %s", tc.shape)
		}
		got, err := Config{Rank: tc.rank, Alpha: 1, TargetModules: tc.targets}.ParamCount(mc)
		if err != nil || got != int64(tc.want) {
			t.Errorf("%s %v r=%d: ParamCount %d (%v), by hand %d", tc.shape, tc.targets, tc.rank, got, err, tc.want)
		}
	}
}
