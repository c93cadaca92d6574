package main

import "fmt"

// Nemotron-3 (model_type nemotron_h, NemotronHForCausalLM) checkpoints as
// NVIDIA publishes them: everything under backbone. (embeddings, layers.N
// with one norm and one mixer each, norm_f) and an untied lm_head; the
// layers by hybrid_override_pattern: M a Mamba-2 mixer (in_proj to z |
// xBC | dt, conv1d with its bias, dt_bias, A_log, D, the grouped gated
// norm, out_proj), * attention without RoPE or biases, E a sigmoid-routed
// mixture of relu² experts (gate.weight and its f32
// e_score_correction_bias, experts.{e}.{up,down}_proj, ungated
// shared_experts.{up,down}_proj; with moe_latent_size, Nemotron-3-Super's
// fc1_latent_proj and fc2_latent_proj around latent-wide experts), - a
// relu² MLP (up_proj, down_proj).

// nemotronPattern exercises every block kind, Mamba-2 at both ends (the
// first layer has no previous add, the last closes the model).
const nemotronPattern = "M*ME-M"

// Mamba-2 shapes of the tiny model: 8 heads of 8 in 2 groups (n_groups <
// heads), states of 16.
const (
	nemoMambaHeads, nemoMambaHeadDim, nemoState, nemoGroups, nemoConvK = 8, 8, 16, 2, 4
)

// Init scales of the Mamba-2 parameters: A = −exp(A_log) ≈ −0.4…−4 and dt
// = softplus(dt + dt_bias) ≈ 0.05–0.4, so exp(dt·A) spreads over (0.2,
// 0.98) and the state both remembers and forgets; conv taps of std 0.3
// with a bias of std 0.1.
const (
	nemoALogMean, nemoALogStd     = 0.3, 0.6
	nemoDTBiasMean, nemoDTBiasStd = -1.5, 0.5
	nemoDMean, nemoDStd           = 1.0, 0.3
	nemoConvStd                   = 0.3
)

func nemotronParams(s spec) []param {
	q, kv := s.heads*s.headDim, s.kvHeads*s.headDim
	d := nemoMambaHeads * nemoMambaHeadDim
	conv := d + 2*nemoGroups*nemoState
	ps := []param{{name: "backbone.embeddings.weight", shape: []int{s.vocab, s.hidden}, std: embedStd}}
	for l, b := range nemotronPattern {
		p := fmt.Sprintf("backbone.layers.%d.", l)
		m := p + "mixer."
		ps = append(ps, norm(p+"norm.weight", s.hidden))
		switch b {
		case 'M':
			ps = append(ps, lin(m+"in_proj.weight", d+conv+nemoMambaHeads, s.hidden),
				param{name: m + "conv1d.weight", shape: []int{conv, 1, nemoConvK}, std: nemoConvStd},
				param{name: m + "conv1d.bias", shape: []int{conv}, std: biasStd},
				param{name: m + "dt_bias", shape: []int{nemoMambaHeads}, mean: nemoDTBiasMean, std: nemoDTBiasStd},
				param{name: m + "A_log", shape: []int{nemoMambaHeads}, mean: nemoALogMean, std: nemoALogStd},
				param{name: m + "D", shape: []int{nemoMambaHeads}, mean: nemoDMean, std: nemoDStd},
				norm(m+"norm.weight", d),
				lin(m+"out_proj.weight", s.hidden, d))
		case '*':
			ps = append(ps, lin(m+"q_proj.weight", q, s.hidden), lin(m+"k_proj.weight", kv, s.hidden),
				lin(m+"v_proj.weight", kv, s.hidden), lin(m+"o_proj.weight", s.hidden, q))
		case 'E':
			ps = append(ps, param{name: m + "gate.weight", shape: []int{s.experts, s.hidden}, std: glmRouterStd},
				param{name: m + "gate.e_score_correction_bias", shape: []int{s.experts}, std: glmBiasStd, f32: true})
			width := s.hidden // the experts' rows: hidden, or a latent MoE's latent
			if s.latent > 0 {
				width = s.latent
				ps = append(ps, lin(m+"fc1_latent_proj.weight", s.latent, s.hidden), lin(m+"fc2_latent_proj.weight", s.hidden, s.latent))
			}
			for e := range s.experts {
				x := fmt.Sprintf("%sexperts.%d.", m, e)
				ps = append(ps, lin(x+"up_proj.weight", s.moeInter, width), lin(x+"down_proj.weight", width, s.moeInter))
			}
			ps = append(ps, lin(m+"shared_experts.up_proj.weight", s.sharedInter, s.hidden),
				lin(m+"shared_experts.down_proj.weight", s.hidden, s.sharedInter))
		case '-':
			ps = append(ps, lin(m+"up_proj.weight", s.intermediate, s.hidden), lin(m+"down_proj.weight", s.hidden, s.intermediate))
		}
	}
	return append(ps, norm("backbone.norm_f.weight", s.hidden),
		param{name: "lm_head.weight", shape: []int{s.vocab, s.hidden}, std: embedStd})
}

// nemotronConfigJSON is Nemotron-3-Nano's config.json keys at the tiny
// shapes, with group-limited routing (4 groups of 2 experts, the best 2
// groups) so the tiny model exercises it.
func nemotronConfigJSON(s spec) string {
	c := map[string]any{
		"architectures":                       []any{"NemotronHForCausalLM"},
		"model_type":                          "nemotron_h",
		"attention_bias":                      false,
		"attention_dropout":                   0.0,
		"bos_token_id":                        1,
		"chunk_size":                          128,
		"conv_kernel":                         nemoConvK,
		"eos_token_id":                        2,
		"expand":                              2,
		"head_dim":                            s.headDim,
		"hidden_dropout":                      0.0,
		"hidden_size":                         s.hidden,
		"hybrid_override_pattern":             nemotronPattern,
		"initializer_range":                   0.02,
		"intermediate_size":                   s.intermediate,
		"layer_norm_epsilon":                  1e-5,
		"mamba_head_dim":                      nemoMambaHeadDim,
		"mamba_hidden_act":                    "silu",
		"mamba_num_heads":                     nemoMambaHeads,
		"mamba_proj_bias":                     false,
		"max_position_embeddings":             s.maxPos,
		"mlp_bias":                            false,
		"mlp_hidden_act":                      "relu2",
		"moe_intermediate_size":               s.moeInter,
		"moe_shared_expert_intermediate_size": s.sharedInter,
		"n_group":                             4,
		"n_groups":                            nemoGroups,
		"n_routed_experts":                    s.experts,
		"norm_topk_prob":                      true,
		"num_attention_heads":                 s.heads,
		"num_experts_per_tok":                 s.topK,
		"num_hidden_layers":                   len(nemotronPattern),
		"num_key_value_heads":                 s.kvHeads,
		"pad_token_id":                        0,
		"residual_in_fp32":                    false,
		"routed_scaling_factor":               2.5,
		"ssm_state_size":                      nemoState,
		"tie_word_embeddings":                 false,
		"time_step_floor":                     0.0001,
		"time_step_max":                       0.1,
		"time_step_min":                       0.001,
		"topk_group":                          2,
		"torch_dtype":                         "float32",
		"use_bias":                            false,
		"use_cache":                           true,
		"use_conv_bias":                       true,
		"vocab_size":                          s.vocab,
	}
	if s.latent > 0 {
		c["moe_latent_size"] = s.latent // Nemotron-3-Super's latent MoE
	}
	return pyJSON(c, "") + "\n"
}
