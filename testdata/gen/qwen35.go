package main

import "fmt"

// Qwen3.5 (model_type qwen3_5, Qwen3_5ForConditionalGeneration) and
// Qwen3.5-MoE / Qwen3.6 (qwen3_5_moe) checkpoints as Qwen publishes them:
// a vision-language wrapper whose text model lives under
// model.language_model.*, beside model.visual.* (the vision tower) and mtp.*
// (the multi-token-prediction head), both of which a text-only trainer skips.
// Every fourth layer is full (gated) attention, the others gated DeltaNet.

// Init scales of the Qwen3.5 family, chosen so that each feature moves the
// logits visibly (testdata/README.md lists the measured effects).
const (
	zeroNormStd = 0.1  // decoder norms store w and scale by (1 + w): w ~ N(0, 0.1²)
	aLogMean    = -2.0 // A = exp(A_log) ≈ 0.03–0.5: per-step decay exp(g) ≈ 0.6–0.97
	aLogStd     = 0.7
	dtBiasMean  = 0.5
	dtBiasStd   = 0.5
	convStd     = 0.5 // depthwise conv taps: the conv mixes neighbours as much as it passes through
	visualStd   = 0.02
)

// qwen35Prefix is where the text model's tensors live in the checkpoint.
const qwen35Prefix = "model.language_model."

// fullAttention reports whether layer l is a full-attention layer
// (full_attention_interval 4: layers 3, 7, ...).
func (s spec) fullAttention(l int) bool { return (l+1)%4 == 0 }

// qwen35Params lists the tensors of a Qwen3.5 checkpoint: the vision tower
// (if s.extras), the text model, the head, the MTP block (if s.extras).
func qwen35Params(s spec) []param {
	zeroNorm := func(name string, n int) param { return param{name: name, shape: []int{n}, std: zeroNormStd} }
	var ps []param
	if s.extras {
		ps = append(ps, visualParams(s)...)
	}
	ps = append(ps, param{name: qwen35Prefix + "embed_tokens.weight", shape: []int{s.vocab, s.hidden}, std: embedStd})
	keyDim, valueDim := s.linKHeads*s.linKDim, s.linVHeads*s.linVDim
	convDim := 2*keyDim + valueDim
	for l := range s.layers {
		p := fmt.Sprintf("%slayers.%d.", qwen35Prefix, l)
		ps = append(ps, zeroNorm(p+"input_layernorm.weight", s.hidden))
		if s.fullAttention(l) {
			// q_proj is twice as wide: per head [query | gate].
			ps = append(ps, lin(p+"self_attn.q_proj.weight", 2*s.heads*s.headDim, s.hidden),
				lin(p+"self_attn.k_proj.weight", s.kvHeads*s.headDim, s.hidden),
				lin(p+"self_attn.v_proj.weight", s.kvHeads*s.headDim, s.hidden),
				lin(p+"self_attn.o_proj.weight", s.hidden, s.heads*s.headDim),
				zeroNorm(p+"self_attn.q_norm.weight", s.headDim),
				zeroNorm(p+"self_attn.k_norm.weight", s.headDim))
		} else {
			a := p + "linear_attn."
			ps = append(ps,
				// A_log stays float32 in bf16 checkpoints (mamba_ssm_dtype).
				param{name: a + "A_log", shape: []int{s.linVHeads}, mean: aLogMean, std: aLogStd, f32: true},
				param{name: a + "conv1d.weight", shape: []int{convDim, 1, s.convK}, std: convStd},
				param{name: a + "dt_bias", shape: []int{s.linVHeads}, mean: dtBiasMean, std: dtBiasStd},
				lin(a+"in_proj_a.weight", s.linVHeads, s.hidden),
				lin(a+"in_proj_b.weight", s.linVHeads, s.hidden),
				lin(a+"in_proj_qkv.weight", convDim, s.hidden),
				lin(a+"in_proj_z.weight", valueDim, s.hidden),
				// The gated RMSNorm is plain w·norm(o) (ones-init), not zero-centred.
				param{name: a + "norm.weight", shape: []int{s.linVDim}, mean: 1, std: normNoise},
				lin(a+"out_proj.weight", s.hidden, valueDim))
		}
		ps = append(ps, zeroNorm(p+"post_attention_layernorm.weight", s.hidden))
		if s.arch == qwen35MoE {
			ps = append(ps, qwen35MoEParams(s, p)...)
		} else {
			ps = append(ps, lin(p+"mlp.gate_proj.weight", s.intermediate, s.hidden),
				lin(p+"mlp.up_proj.weight", s.intermediate, s.hidden),
				lin(p+"mlp.down_proj.weight", s.hidden, s.intermediate))
		}
	}
	ps = append(ps, zeroNorm(qwen35Prefix+"norm.weight", s.hidden))
	if !s.tied {
		ps = append(ps, param{name: "lm_head.weight", shape: []int{s.vocab, s.hidden}, std: embedStd})
	}
	if s.extras {
		ps = append(ps, mtpParams(s)...)
	}
	return ps
}

// qwen35MoEParams are a layer's router, routed experts (fused 3-D tensors
// as transformers and Qwen's checkpoints hold them: gate_up_proj
// [experts, 2·moe_intermediate, hidden] with the gate rows first, down_proj
// [experts, hidden, moe_intermediate]; or, with s.perExpert, the same values
// split per expert), shared expert and its sigmoid gate.
func qwen35MoEParams(s spec, p string) []param {
	ps := []param{{name: p + "mlp.gate.weight", shape: []int{s.experts, s.hidden}, std: routerStd}}
	ps = append(ps, routedExperts(p+"mlp.experts.", s, !s.perExpert)...)
	return append(ps,
		lin(p+"mlp.shared_expert.gate_proj.weight", s.sharedInter, s.hidden),
		lin(p+"mlp.shared_expert.up_proj.weight", s.sharedInter, s.hidden),
		lin(p+"mlp.shared_expert.down_proj.weight", s.hidden, s.sharedInter),
		lin(p+"mlp.shared_expert_gate.weight", 1, s.hidden))
}

// rows returns the values of rows [from, to) of matrix e of the 3-D tensor
// fused, drawn from fused's own stream: the per-expert layout then holds
// exactly the fused layout's numbers.
func rows(fused param, e, from, to int) func(seed string) []float32 {
	return func(seed string) []float32 {
		all := values(seed, fused)
		r, c := fused.shape[1], fused.shape[2]
		return all[(e*r+from)*c : (e*r+to)*c]
	}
}

// visualParams is a one-block vision tower in Qwen3.5's names and shapes
// (patch embed conv3d, learned position embedding, one ViT block, patch
// merger), only there to be skipped.
func visualParams(s spec) []param {
	const d, inter, merged = 16, 32, 64 // hidden, MLP, hidden·spatial_merge²
	v := func(name string, shape ...int) param {
		return param{name: "model.visual." + name, shape: shape, std: visualStd}
	}
	return []param{
		v("blocks.0.attn.proj.bias", d), v("blocks.0.attn.proj.weight", d, d),
		v("blocks.0.attn.qkv.bias", 3*d), v("blocks.0.attn.qkv.weight", 3*d, d),
		v("blocks.0.mlp.linear_fc1.bias", inter), v("blocks.0.mlp.linear_fc1.weight", inter, d),
		v("blocks.0.mlp.linear_fc2.bias", d), v("blocks.0.mlp.linear_fc2.weight", d, inter),
		v("blocks.0.norm1.bias", d), v("blocks.0.norm1.weight", d),
		v("blocks.0.norm2.bias", d), v("blocks.0.norm2.weight", d),
		v("merger.linear_fc1.bias", merged), v("merger.linear_fc1.weight", merged, merged),
		v("merger.linear_fc2.bias", s.hidden), v("merger.linear_fc2.weight", s.hidden, merged),
		v("merger.norm.bias", d), v("merger.norm.weight", d),
		v("patch_embed.proj.bias", d), v("patch_embed.proj.weight", d, 3, 2, 2, 2),
		v("pos_embed.weight", 16, d),
	}
}

// mtpParams is Qwen3.5's multi-token-prediction block (mtp_num_hidden_layers
// 1: a full-attention decoder layer over fc([norm(embedding); norm(hidden)])),
// which transformers ignores on load (_keys_to_ignore_on_load_unexpected ^mtp.*).
func mtpParams(s spec) []param {
	lin := func(name string, out, in int) param {
		return param{name: "mtp." + name, shape: []int{out, in}, std: linearStd}
	}
	norm := func(name string, n int) param { return param{name: "mtp." + name, shape: []int{n}, std: zeroNormStd} }
	return []param{
		lin("fc.weight", s.hidden, 2*s.hidden),
		norm("layers.0.input_layernorm.weight", s.hidden),
		lin("layers.0.mlp.down_proj.weight", s.hidden, s.intermediate),
		lin("layers.0.mlp.gate_proj.weight", s.intermediate, s.hidden),
		lin("layers.0.mlp.up_proj.weight", s.intermediate, s.hidden),
		norm("layers.0.post_attention_layernorm.weight", s.hidden),
		norm("layers.0.self_attn.k_norm.weight", s.headDim),
		lin("layers.0.self_attn.k_proj.weight", s.kvHeads*s.headDim, s.hidden),
		lin("layers.0.self_attn.o_proj.weight", s.hidden, s.heads*s.headDim),
		norm("layers.0.self_attn.q_norm.weight", s.headDim),
		lin("layers.0.self_attn.q_proj.weight", 2*s.heads*s.headDim, s.hidden),
		lin("layers.0.self_attn.v_proj.weight", s.kvHeads*s.headDim, s.hidden),
		norm("norm.weight", s.hidden),
		norm("pre_fc_norm_embedding.weight", s.hidden),
		norm("pre_fc_norm_hidden.weight", s.hidden),
	}
}

// qwen35ConfigJSON is config.json as Qwen's Qwen3.5 / Qwen3.6 checkpoints
// have it: the architecture, vision-language token ids and tie flag at the
// top level, the language model's keys in text_config (its own model_type
// qwen3_5_text / qwen3_5_moe_text, layer_types spelled out,
// full_attention_interval, rope_parameters with mRoPE and
// partial_rotary_factor, attn_output_gate, the linear_* DeltaNet sizes,
// mamba_ssm_dtype, the MTP keys), the vision tower's in vision_config.
func qwen35ConfigJSON(s spec) string {
	dtype := "float32"
	if s.bf16 {
		dtype = "bfloat16"
	}
	layerTypes := make([]any, s.layers)
	for l := range layerTypes {
		layerTypes[l] = "linear_attention"
		if s.fullAttention(l) {
			layerTypes[l] = "full_attention"
		}
	}
	text := map[string]any{
		"attention_bias":               false,
		"attention_dropout":            0.0,
		"attn_output_gate":             true,
		"bos_token_id":                 1,
		"dtype":                        dtype,
		"eos_token_id":                 2,
		"full_attention_interval":      4,
		"head_dim":                     s.headDim,
		"hidden_act":                   "silu",
		"hidden_size":                  s.hidden,
		"initializer_range":            0.02,
		"layer_types":                  layerTypes,
		"linear_conv_kernel_dim":       s.convK,
		"linear_key_head_dim":          s.linKDim,
		"linear_num_key_heads":         s.linKHeads,
		"linear_num_value_heads":       s.linVHeads,
		"linear_value_head_dim":        s.linVDim,
		"mamba_ssm_dtype":              "float32",
		"max_position_embeddings":      s.maxPos,
		"mtp_num_hidden_layers":        0,
		"mtp_use_dedicated_embeddings": false,
		"num_attention_heads":          s.heads,
		"num_hidden_layers":            s.layers,
		"num_key_value_heads":          s.kvHeads,
		"rms_norm_eps":                 1e-6,
		"rope_parameters": map[string]any{
			// Real checkpoints: mrope_section [11, 11, 10] over 32 rotary
			// frequencies; here 4 frequencies (head_dim 32 · 0.25 / 2).
			"mrope_interleaved":     true,
			"mrope_section":         []any{2, 1, 1},
			"partial_rotary_factor": 0.25,
			"rope_theta":            10000000,
			"rope_type":             "default",
		},
		"tie_word_embeddings": s.tied,
		"use_cache":           true,
		"vocab_size":          s.vocab,
	}
	if s.extras {
		text["mtp_num_hidden_layers"] = 1
	}
	c := map[string]any{
		"image_token_id":        500,
		"language_model_only":   false,
		"tie_word_embeddings":   s.tied,
		"transformers_version":  "4.57.0.dev0",
		"video_token_id":        501,
		"vision_end_token_id":   499,
		"vision_start_token_id": 498,
	}
	vision := map[string]any{
		"deepstack_visual_indexes": []any{},
		"depth":                    1,
		"hidden_act":               "gelu_pytorch_tanh",
		"hidden_size":              16,
		"in_channels":              3,
		"initializer_range":        0.02,
		"intermediate_size":        32,
		"num_heads":                2,
		"num_position_embeddings":  16,
		"out_hidden_size":          s.hidden,
		"patch_size":               2,
		"spatial_merge_size":       2,
		"temporal_patch_size":      2,
	}
	switch s.arch {
	case qwen35:
		c["architectures"] = []any{"Qwen3_5ForConditionalGeneration"}
		c["model_type"] = "qwen3_5"
		text["model_type"] = "qwen3_5_text"
		text["intermediate_size"] = s.intermediate
		vision["model_type"] = "qwen3_5"
	case qwen35MoE:
		c["architectures"] = []any{"Qwen3_5MoeForConditionalGeneration"}
		c["model_type"] = "qwen3_5_moe"
		text["model_type"] = "qwen3_5_moe_text"
		text["moe_intermediate_size"] = s.moeInter
		text["num_experts"] = s.experts
		text["num_experts_per_tok"] = s.topK
		text["output_router_logits"] = false
		text["router_aux_loss_coef"] = 0.001
		text["shared_expert_intermediate_size"] = s.sharedInter
		vision["model_type"] = "qwen3_5_moe"
	}
	c["text_config"] = text
	c["vision_config"] = vision
	return pyJSON(c, "") + "\n"
}
