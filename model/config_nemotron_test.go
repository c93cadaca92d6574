package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseNemotronConfig: the tiny Nemotron-3 config.json (Nano's keys)
// maps onto one block per layer by its pattern, the Mamba-2 shapes, the
// router's settings and relu² experts with an ungated shared expert; the
// checkpoint's names are the published backbone.* ones.
func TestParseNemotronConfig(t *testing.T) {
	c, err := LoadConfig(filepath.Join("..", "testdata", "models", "nemotron_h-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds, mixers []string
	for l := range c.NumLayers {
		d := c.decoderLayer(l)
		kinds = append(kinds, string(c.Block(l)))
		mixers = append(mixers, d.mixer.cacheKind().String())
		if d.hasMixer() == d.hasChannel() {
			t.Errorf("layer %d: mixer %v, channel %v; want exactly one block", l, d.hasMixer(), d.hasChannel())
		}
	}
	if got := strings.Join(kinds, ""); got != "M*ME-M" {
		t.Errorf("pattern %q", got)
	}
	if got := strings.Join(mixers, ","); got != "mamba2,full_attention,mamba2,none,none,mamba2" {
		t.Errorf("mixers %s", got)
	}
	if c.LinearLayers() != 3 || c.AttentionLayers() != 1 || c.SparseLayers() != 1 || !c.IsSparse(3) {
		t.Errorf("linear %d, attention %d, sparse %d layers", c.LinearLayers(), c.AttentionLayers(), c.SparseLayers())
	}
	if c.MambaDim() != 64 || c.MambaConvDim() != 128 || c.MambaInProjDim() != 200 || c.ConvStateWidth() != 3*128 || c.RecurrentStateWidth() != 8*8*16 {
		t.Errorf("Mamba dims %d %d %d, states %d %d", c.MambaDim(), c.MambaConvDim(), c.MambaInProjDim(), c.ConvStateWidth(), c.RecurrentStateWidth())
	}
	if r := c.SigmoidRouting(); c.NumExperts != 8 || r.Groups != 4 || r.TopKGroups != 2 || !r.NormTopK || r.Scale != 2.5 || c.SharedExpertIntermediateSize != 48 {
		t.Errorf("experts %d, routing %+v, shared %d", c.NumExperts, r, c.SharedExpertIntermediateSize)
	}
	if c.RMSNormEps != 1e-5 || c.RotaryDim() != 2 || c.RopeInvFreq()[0] != 0 {
		t.Errorf("eps %v, rotary %d %v: want layer_norm_epsilon and no RoPE", c.RMSNormEps, c.RotaryDim(), c.RopeInvFreq())
	}
	if ch, ok := c.decoderLayer(3).channel.(moe); !ok || !ch.relu2 || ch.sharedGate || !ch.sigmoidRouter {
		t.Errorf("layer 3 channel %+v", c.decoderLayer(3).channel)
	}
	if c.HasProj(3, ProjGate) || !c.HasProj(3, ProjUp) || !c.HasProj(3, ProjSharedUp) || c.HasProj(3, ProjSharedGate) ||
		!c.HasProj(0, ProjMambaIn) || !c.HasProj(0, ProjOut) || !c.HasProj(4, ProjUp) || c.HasProj(4, ProjGate) {
		t.Error("projections: want in_proj/out_proj in M layers, up/down (no gate) in E and - layers")
	}
	names := map[string]bool{}
	var w Weights
	for _, sp := range c.specs(&w) {
		names[sp.name] = true
	}
	for _, n := range []string{"backbone.embeddings.weight", "backbone.layers.0.norm.weight", "backbone.layers.0.mixer.in_proj.weight",
		"backbone.layers.1.mixer.q_proj.weight", "backbone.layers.3.mixer.gate.e_score_correction_bias",
		"backbone.layers.3.mixer.experts.7.up_proj.weight", "backbone.layers.3.mixer.shared_experts.down_proj.weight",
		"backbone.layers.4.mixer.up_proj.weight", "backbone.norm_f.weight", "lm_head.weight"} {
		if !names[n] {
			t.Errorf("no tensor %s", n)
		}
	}
	if names["backbone.layers.0.input_layernorm.weight"] || names["backbone.layers.3.mixer.experts.0.gate_proj.weight"] {
		t.Error("Llama-style or gate tensors in a Nemotron-H layout")
	}
}

// TestNemotronConfigErrors: each bad or unsupported value fails with one
// line naming its key.
func TestNemotronConfigErrors(t *testing.T) {
	base, err := os.ReadFile(filepath.Join("..", "testdata", "models", "nemotron_h-tiny", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ old, new, key string }{
		{`"hybrid_override_pattern": "M*ME-M"`, `"hybrid_override_pattern": "M*MX-M"`, "hybrid_override_pattern"},
		{`"hybrid_override_pattern": "M*ME-M"`, `"hybrid_override_pattern": "M*ME-"`, "hybrid_override_pattern"},
		{`"mamba_num_heads": 8`, `"mamba_num_heads": 7`, "n_groups"},
		{`"mamba_head_dim": 8`, `"mamba_head_dim": 0`, "mamba_head_dim"},
		{`"ssm_state_size": 16`, `"ssm_state_size": -1`, "ssm_state_size"},
		{`"conv_kernel": 4`, `"conv_kernel": 9`, "conv_kernel"},
		{`"use_conv_bias": true`, `"use_conv_bias": false`, "use_conv_bias"},
		{`"mamba_hidden_act": "silu"`, `"mamba_hidden_act": "gelu"`, "mamba_hidden_act"},
		{`"mlp_hidden_act": "relu2"`, `"mlp_hidden_act": "silu"`, "mlp_hidden_act"},
		{`"n_routed_experts": 8`, `"n_routed_experts": 0`, "n_routed_experts"},
		{`"moe_shared_expert_intermediate_size": 48`, `"moe_shared_expert_intermediate_size": 0`, "moe_shared_expert_intermediate_size"},
		{`"n_group": 4`, `"n_group": 3`, "n_group"},
		{`"routed_scaling_factor": 2.5`, `"routed_scaling_factor": 0.0`, "routed_scaling_factor"},
		{`"layer_norm_epsilon": 1e-05`, `"layer_norm_epsilon": 0.0`, "layer_norm_epsilon"},
		{`"tie_word_embeddings": false`, `"tie_word_embeddings": true`, "tie_word_embeddings"},
		{`"use_bias": false`, `"use_bias": true`, "use_bias"},
		{`"use_bias": false`, `"use_bias": false, "moe_latent_size": 0`, "moe_latent_size"},
		{`"use_bias": false`, `"use_bias": false, "moe_latent_size": 65`, "moe_latent_size"},
		{`"use_bias": false`, `"use_bias": false, "time_step_limit": [0.001, 0.1]`, "time_step_limit"},
	} {
		data := strings.Replace(string(base), tc.old, tc.new, 1)
		if data == string(base) {
			t.Fatalf("%s: %q not in the tiny config", tc.key, tc.old)
		}
		_, err := ParseConfig([]byte(data))
		if err == nil || !strings.Contains(err.Error(), tc.key) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v", tc.new, err)
		}
	}
	// transformers' current key, layers_block_type, instead of the pattern.
	data := strings.Replace(string(base), `"hybrid_override_pattern": "M*ME-M"`,
		`"layers_block_type": ["mamba", "attention", "linear_attention", "moe", "mlp", "mamba"]`, 1)
	c, err := ParseConfig([]byte(data))
	if err != nil || c.Block(1) != BlockAttention || c.Block(2) != BlockMamba || c.Block(4) != BlockMLP {
		t.Errorf("layers_block_type: %v", err)
	}
}

// TestNemotronNanoShape: Nemotron-3-Nano's published config.json parses
// to 23 Mamba-2, 23 MoE and 6 attention layers, and its parameter counts
// are the published 31.6B total and about 3.6B active (3.2B without the
// embedding and head; NVIDIA's card says 3.5B, the paper 3.6B).
func TestNemotronNanoShape(t *testing.T) {
	c, ok := Shape("nemotron-3-nano-30b-a3b")
	if !ok {
		t.Fatal("no shape")
	}
	if c.LinearLayers() != 23 || c.SparseLayers() != 23 || c.AttentionLayers() != 6 {
		t.Errorf("layers: %d Mamba-2, %d MoE, %d attention", c.LinearLayers(), c.SparseLayers(), c.AttentionLayers())
	}
	total, active := float64(c.ParamCount())/1e9, float64(c.ActiveParamCount())/1e9
	t.Logf("%.2fB parameters, %.2fB active", total, active)
	if total < 31.4 || total > 31.8 || active < 3.4 || active > 3.8 {
		t.Errorf("%.2fB parameters (%.2fB active), want 31.6B (≈3.6B)", total, active)
	}
}

// TestNemotronSuperShape: Nemotron-3-Super's config parses to 40
// Mamba-2, 40 latent MoE and 8 attention layers, its experts latent
// wide (1024 of hidden 4096), and its parameter counts are the model's
// name's 120B total and 12B active (120.7B and 12.8B with the embedding
// and head: the 40 layers' fc1/fc2_latent_proj are 0.34B of the active).
func TestNemotronSuperShape(t *testing.T) {
	c, ok := Shape("nemotron-3-super-120b-a12b")
	if !ok {
		t.Fatal("no shape")
	}
	if c.LinearLayers() != 40 || c.SparseLayers() != 40 || c.AttentionLayers() != 8 {
		t.Errorf("layers: %d Mamba-2, %d MoE, %d attention", c.LinearLayers(), c.SparseLayers(), c.AttentionLayers())
	}
	if c.MoELatent() != 1024 || c.ExpertWidth() != 1024 {
		t.Errorf("latent %d, expert width %d, want 1024", c.MoELatent(), c.ExpertWidth())
	}
	if in, out := c.ExpertDims(ProjUp); in != 1024 || out != 2688 {
		t.Errorf("expert up_proj %d → %d, want 1024 → 2688", in, out)
	}
	total, active := float64(c.ParamCount())/1e9, float64(c.ActiveParamCount())/1e9
	t.Logf("%.2fB parameters, %.2fB active", total, active)
	if total < 120 || total > 121 || active < 12 || active > 13 {
		t.Errorf("%.2fB parameters (%.2fB active), want ≈120B (≈12B)", total, active)
	}
}
