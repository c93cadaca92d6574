package model

import (
	"strings"
	"testing"
)

// glmBase is a GLM-4.5 config.json in miniature, with the keys
// GLM-4.5-Air's sets.
const glmBase = `"architectures":["Glm4MoeForCausalLM"],"model_type":"glm4_moe","hidden_size":64,"intermediate_size":96,
	"num_hidden_layers":3,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,"vocab_size":100,
	"attention_bias":true,"first_k_dense_replace":1,"moe_intermediate_size":32,"n_routed_experts":8,"n_shared_experts":1,
	"num_experts_per_tok":2,"n_group":1,"topk_group":1,"routed_scaling_factor":2.5,"norm_topk_prob":true,
	"partial_rotary_factor":0.5,"use_qk_norm":false,"num_nextn_predict_layers":1,"rms_norm_eps":1e-5`

// TestParseGLMConfig: GLM-4.5's keys map onto the blocks: dense layers
// below first_k_dense_replace, n_routed_experts experts, shared experts
// of moe_intermediate_size × n_shared_experts (ungated, no
// shared_expert_gate), q/k/v biases without o_proj's, partial rotary and
// the sigmoid router's settings; Glm4MoeConfig's defaults fill what is
// left out.
func TestParseGLMConfig(t *testing.T) {
	c, err := ParseConfig([]byte(`{` + glmBase + `}`))
	if err != nil {
		t.Fatal(err)
	}
	var sparse []bool
	for l := range c.NumLayers {
		sparse = append(sparse, c.IsSparse(l))
	}
	if want := []bool{false, true, true}; !equalBools(sparse, want) {
		t.Errorf("sparse layers %v, want %v", sparse, want)
	}
	if c.NumExperts != 8 || c.SharedExpertIntermediateSize != 32 || c.RotaryDim() != 8 {
		t.Errorf("experts %d, shared width %d, rotary dim %d; want 8, 32, 8", c.NumExperts, c.SharedExpertIntermediateSize, c.RotaryDim())
	}
	if r := c.SigmoidRouting(); r.Groups != 1 || r.TopKGroups != 1 || !r.NormTopK || r.Scale != 2.5 {
		t.Errorf("routing %+v", r)
	}
	att, ok := c.decoderLayer(0).mixer.(attention)
	if !ok || !att.qkvBias || att.oBias || att.qkNorm || att.outputGate {
		t.Errorf("attention %+v, want q/k/v biases only", c.decoderLayer(0).mixer)
	}
	if ch, ok := c.decoderLayer(1).channel.(moe); !ok || !ch.shared || ch.sharedGate || !ch.sigmoidRouter {
		t.Errorf("layer 1 channel %+v, want moe with an ungated shared expert and the sigmoid router", c.decoderLayer(1).channel)
	}
	if _, ok := c.decoderLayer(0).channel.(swiGLU); !ok {
		t.Errorf("layer 0 channel %T, want swiGLU", c.decoderLayer(0).channel)
	}
	if c.HasProj(1, ProjSharedScale) || !c.HasProj(1, ProjSharedDown) || c.HasProj(0, ProjSharedGate) {
		t.Error("shared-expert projections: want gate/up/down in sparse layers only, no shared_expert_gate")
	}
	if got := c.ProjModule(ProjSharedUp); got != "mlp.shared_experts.up_proj" {
		t.Errorf("shared up module %q", got)
	}
	names := map[string]bool{}
	var w Weights
	for _, sp := range c.specs(&w) {
		names[sp.name] = true
	}
	for _, n := range []string{"model.layers.1.mlp.gate.e_score_correction_bias", "model.layers.1.mlp.shared_experts.down_proj.weight",
		"model.layers.0.mlp.gate_proj.weight", "model.layers.2.mlp.experts.7.down_proj.weight", "model.layers.0.self_attn.q_proj.bias"} {
		if !names[n] {
			t.Errorf("no tensor %s", n)
		}
	}
	for _, n := range []string{"model.layers.1.mlp.shared_expert_gate.weight", "model.layers.0.self_attn.o_proj.bias", "model.layers.0.self_attn.q_norm.weight"} {
		if names[n] {
			t.Errorf("unexpected tensor %s", n)
		}
	}
	line := skippedTensors(c, []string{"model.layers.3.eh_proj.weight", "model.layers.3.mlp.gate.weight", "model.layers.2.mlp.gate.weight", "lm_head.weight"})
	if !strings.Contains(line, "skipped 2 multi-token-prediction tensors") || !strings.Contains(line, "model.layers.3.") {
		t.Errorf("skipped line %q", line)
	}

	// Defaults (Glm4MoeConfig's): 128 experts, 1 shared, first layer
	// dense, scale 1, one group, renormalised, moe_intermediate 1408,
	// partial rotary 0.5, use_qk_norm read when set.
	d, err := ParseConfig([]byte(`{"model_type":"glm4_moe","hidden_size":64,"intermediate_size":96,"num_hidden_layers":2,
		"num_attention_heads":4,"head_dim":16,"vocab_size":100,"use_qk_norm":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if d.NumExperts != 128 || d.SharedExpertIntermediateSize != 1408 || d.MoEIntermediateSize != 1408 || d.IsSparse(0) || !d.IsSparse(1) ||
		d.RoutedScalingFactor != 1 || !d.NormTopKProb || d.RotaryDim() != 8 || d.RMSNormEps != 1e-5 {
		t.Errorf("defaults: %+v %+v", d.MoEConfig, d.GLMMoEConfig)
	}
	if att := d.decoderLayer(0).mixer.(attention); !att.qkNorm || att.qkvBias {
		t.Errorf("use_qk_norm, no attention_bias: %+v", att)
	}
	// Another family keeps none of GLM's settings.
	q, err := ParseConfig([]byte(`{` + moeBase + `,"n_routed_experts":4,"first_k_dense_replace":2}`))
	if err != nil || q.NumExperts != 128 || q.FirstKDenseReplace != 0 {
		t.Errorf("qwen3_moe with GLM keys: %v, %+v", err, q.GLMMoEConfig)
	}
}

func TestParseGLMConfigErrors(t *testing.T) {
	for _, tc := range []struct{ extra, want string }{
		{`"n_group":3`, "do not split into 3 groups"},
		{`"n_group":4,"topk_group":5`, "top-k groups 5"},
		{`"n_group":8,"topk_group":2`, "a group's score is its top two"},
		{`"first_k_dense_replace":4`, "first_k_dense_replace 4"},
		{`"routed_scaling_factor":0`, "routed_scaling_factor"},
		{`"num_experts_per_tok":9`, "num_experts_per_tok 9"},
	} {
		_, err := ParseConfig([]byte(`{` + glmBase + `,` + tc.extra + `}`))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.extra, err, tc.want)
		}
	}
}

// TestLoadGLMSkipsNextN: the tiny checkpoint's multi-token-prediction
// layer (model.layers.3.*) is skipped, in one line.
func TestLoadGLMSkipsNextN(t *testing.T) {
	m := loadTiny(t, "glm4_moe-tiny")
	if want := "skipped 4 multi-token-prediction tensors (1 layers from model.layers.3.*)"; !strings.Contains(m.Skipped, want) {
		t.Errorf("Skipped = %q, want it to contain %q", m.Skipped, want)
	}
}
