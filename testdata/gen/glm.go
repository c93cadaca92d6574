package main

import "fmt"

// GLM-4.5 / INTELLECT-3 (model_type glm4_moe, Glm4MoeForCausalLM)
// checkpoints as zai-org publishes them: q/k/v with biases and o_proj
// without, dense SwiGLU MLPs in the first first_k_dense_replace layers and
// mixtures of experts after (a sigmoid router mlp.gate with its f32
// e_score_correction_bias, per-expert mlp.experts.{e}.{gate,up,down}_proj,
// or with s.fused transformers' 3-D gate_up_proj/down_proj, and ungated
// mlp.shared_experts), and the multi-token-prediction layer stored as
// model.layers.{num_hidden_layers}.*, which a trainer skips.

// Init scales of the GLM family: router logits of std ≈ 1.2 keep the
// sigmoid scores spread over (0, 1) instead of saturating at 1, and a
// correction bias of std 0.05 is large enough to change some tokens'
// experts (reference.py reports how many).
const (
	glmRouterStd = 0.22
	glmBiasStd   = 0.05
)

// glmFirstDense is first_k_dense_replace of the tiny GLM models.
const glmFirstDense = 1

func glmParams(s spec) []param {
	q, kv := s.heads*s.headDim, s.kvHeads*s.headDim
	ps := []param{{name: "model.embed_tokens.weight", shape: []int{s.vocab, s.hidden}, std: embedStd}}
	for l := range s.layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		ps = append(ps, norm(p+"input_layernorm.weight", s.hidden),
			lin(p+"self_attn.q_proj.weight", q, s.hidden), bias(p+"self_attn.q_proj.bias", q),
			lin(p+"self_attn.k_proj.weight", kv, s.hidden), bias(p+"self_attn.k_proj.bias", kv),
			lin(p+"self_attn.v_proj.weight", kv, s.hidden), bias(p+"self_attn.v_proj.bias", kv),
			norm(p+"self_attn.q_norm.weight", s.headDim), norm(p+"self_attn.k_norm.weight", s.headDim),
			lin(p+"self_attn.o_proj.weight", s.hidden, q),
			norm(p+"post_attention_layernorm.weight", s.hidden))
		if l < glmFirstDense {
			ps = append(ps, lin(p+"mlp.gate_proj.weight", s.intermediate, s.hidden),
				lin(p+"mlp.up_proj.weight", s.intermediate, s.hidden),
				lin(p+"mlp.down_proj.weight", s.hidden, s.intermediate))
			continue
		}
		ps = append(ps, glmMoEParams(s, p)...)
	}
	ps = append(ps, norm("model.norm.weight", s.hidden),
		param{name: "lm_head.weight", shape: []int{s.vocab, s.hidden}, std: embedStd})
	// A few of the MTP layer's tensors: enough to be skipped, by name.
	m := fmt.Sprintf("model.layers.%d.", s.layers)
	return append(ps, lin(m+"eh_proj.weight", s.hidden, 2*s.hidden), norm(m+"enorm.weight", s.hidden),
		norm(m+"hnorm.weight", s.hidden), lin(m+"self_attn.q_proj.weight", q, s.hidden))
}

// glmMoEParams are a sparse layer's router, correction bias, routed
// experts (per expert, or fused with the same values) and shared experts.
func glmMoEParams(s spec, p string) []param {
	ps := []param{{name: p + "mlp.gate.weight", shape: []int{s.experts, s.hidden}, std: glmRouterStd},
		{name: p + "mlp.gate.e_score_correction_bias", shape: []int{s.experts}, std: glmBiasStd, f32: true}}
	ps = append(ps, routedExperts(p+"mlp.experts.", s, s.fused)...)
	return append(ps,
		lin(p+"mlp.shared_experts.gate_proj.weight", s.sharedInter, s.hidden),
		lin(p+"mlp.shared_experts.up_proj.weight", s.sharedInter, s.hidden),
		lin(p+"mlp.shared_experts.down_proj.weight", s.hidden, s.sharedInter))
}

// glmConfigJSON is GLM-4.5-Air's config.json keys at the tiny shapes,
// with group-limited routing (GLM-4.5 itself has n_group 1) so the tiny
// model exercises it, and use_qk_norm on.
func glmConfigJSON(s spec) string {
	c := map[string]any{
		"architectures":            []any{"Glm4MoeForCausalLM"},
		"model_type":               "glm4_moe",
		"attention_bias":           true,
		"attention_dropout":        0.0,
		"pad_token_id":             0,
		"eos_token_id":             []any{2, 3},
		"first_k_dense_replace":    glmFirstDense,
		"head_dim":                 s.headDim,
		"hidden_act":               "silu",
		"hidden_size":              s.hidden,
		"initializer_range":        0.02,
		"intermediate_size":        s.intermediate,
		"max_position_embeddings":  s.maxPos,
		"moe_intermediate_size":    s.moeInter,
		"n_group":                  4,
		"n_routed_experts":         s.experts,
		"n_shared_experts":         s.sharedInter / s.moeInter,
		"norm_topk_prob":           true,
		"num_attention_heads":      s.heads,
		"num_experts_per_tok":      s.topK,
		"num_hidden_layers":        s.layers,
		"num_key_value_heads":      s.kvHeads,
		"num_nextn_predict_layers": 1,
		"partial_rotary_factor":    0.5,
		"rms_norm_eps":             1e-5,
		"rope_scaling":             nil,
		"rope_theta":               1000000,
		"routed_scaling_factor":    2.5,
		"tie_word_embeddings":      false,
		"topk_group":               2,
		"torch_dtype":              "float32",
		"transformers_version":     "4.54.0",
		"use_cache":                true,
		"use_qk_norm":              true,
		"vocab_size":               s.vocab,
	}
	return pyJSON(c, "") + "\n"
}
