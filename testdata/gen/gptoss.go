package main

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
)

// gpt-oss (model_type gpt_oss, GptOssForCausalLM) checkpoints as openai
// publishes them: q/k/v/o with biases, per-head attention sinks, a router
// mlp.router with a bias, and each layer's experts as transformers'
// Parameters used as x·W — gate_up_proj [E, hidden, 2·I] with gate and
// up interleaved by column, down_proj [E, I, hidden], each with a bias —
// or (s.mxfp4) those two stored as MXFP4 *_blocks/*_scales, transposed
// to [E, out, in] in blocks of 32 along in. The weights of the experts
// are drawn as MXFP4 (random nibbles and block scales), so the f32 and
// bf16 (s.bf16Experts) Parameters hold exactly their dequantized values
// and the three checkpoints hold the same model: f32 experts take the f32
// grouped GEMM, bf16 and MXFP4 ones the tensor cores'. The tiny models
// keep the other tensors in f32 (the published ones are bf16), which the
// f32 bars of the goldens need.

// Init scales of the gpt-oss family: sinks of std 1 move a visible share
// of each row's attention to the sink; MXFP4 block exponents 2^−7…2^−5
// give expert weights of std ≈ 0.05.
const (
	gptOssSinkStd  = 1.0
	gptOssMinScale = 120 // 2^(120−127)
	gptOssScales   = 3
)

// gptOssWindow is the tiny models' sliding window, shorter than the test
// sequences; gptOssLimit their swiglu_limit, small enough that the clamps
// act on some of the tiny model's gate and up values.
const (
	gptOssWindow = 4
	gptOssLimit  = 0.6
)

func gptOssParams(s spec) []param {
	q, kv := s.heads*s.headDim, s.kvHeads*s.headDim
	ps := []param{{name: "model.embed_tokens.weight", shape: []int{s.vocab, s.hidden}, std: embedStd}}
	for l := range s.layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		ps = append(ps, norm(p+"input_layernorm.weight", s.hidden),
			lin(p+"self_attn.q_proj.weight", q, s.hidden), bias(p+"self_attn.q_proj.bias", q),
			lin(p+"self_attn.k_proj.weight", kv, s.hidden), bias(p+"self_attn.k_proj.bias", kv),
			lin(p+"self_attn.v_proj.weight", kv, s.hidden), bias(p+"self_attn.v_proj.bias", kv),
			lin(p+"self_attn.o_proj.weight", s.hidden, q), bias(p+"self_attn.o_proj.bias", s.hidden),
			param{name: p + "self_attn.sinks", shape: []int{s.heads}, std: gptOssSinkStd},
			norm(p+"post_attention_layernorm.weight", s.hidden),
			param{name: p + "mlp.router.weight", shape: []int{s.experts, s.hidden}, std: routerStd},
			bias(p+"mlp.router.bias", s.experts))
		ps = append(ps, gptOssExpert(s, p+"mlp.experts.gate_up_proj", s.hidden, 2*s.moeInter)...)
		ps = append(ps, param{name: p + "mlp.experts.gate_up_proj_bias", shape: []int{s.experts, 2 * s.moeInter}, std: biasStd},
			param{name: p + "mlp.experts.down_proj_bias", shape: []int{s.experts, s.hidden}, std: biasStd})
		ps = append(ps, gptOssExpert(s, p+"mlp.experts.down_proj", s.moeInter, s.hidden)...)
	}
	return append(ps, norm("model.norm.weight", s.hidden),
		param{name: "lm_head.weight", shape: []int{s.vocab, s.hidden}, std: embedStd})
}

// gptOssExpert is one expert Parameter of in × out per expert: MXFP4
// blocks and scales, or the Parameter [E, in, out] of their dequantized
// values (f32, or bf16 with s.bf16Experts).
func gptOssExpert(s spec, name string, in, out int) []param {
	blocks, scales := mxfp4Draw(s.seedName(), name, s.experts, out, in)
	if s.mxfp4 {
		return []param{{name: name + "_blocks", shape: []int{s.experts, out, in / 32, 16}, raw: blocks},
			{name: name + "_scales", shape: []int{s.experts, out, in / 32}, raw: scales}}
	}
	return []param{{name: name, shape: []int{s.experts, in, out}, bf16: s.bf16Experts, slice: func(string) []float32 {
		w := mxfp4Dequant(blocks, scales, s.experts, out, in)
		t := make([]float32, len(w))
		for e := range s.experts {
			for o := range out {
				for i := range in {
					t[(e*in+i)*out+o] = w[(e*out+o)*in+i]
				}
			}
		}
		return t
	}}}
}

// mxfp4Draw draws an expert Parameter's MXFP4 blocks (uniform bytes) and
// scales (2^−7 … 2^−5) from a stream seeded by the model and name.
func mxfp4Draw(model, name string, experts, out, in int) (blocks, scales []byte) {
	h := fnv.New64a()
	h.Write([]byte(model + "\x00" + name + "\x00mxfp4"))
	rng := rand.New(rand.NewPCG(h.Sum64(), 0x6772706f))
	blocks = make([]byte, experts*out*in/2)
	for i := range blocks {
		blocks[i] = byte(rng.Uint64())
	}
	scales = make([]byte, experts*out*in/32)
	for i := range scales {
		scales[i] = byte(gptOssMinScale + rng.IntN(gptOssScales))
	}
	return blocks, scales
}

// mxfp4Dequant is the dequantized [E, out, in]: byte k of block b holds
// elements 32b+2k (low nibble) and 32b+2k+1 (high), e2m1 codes scaled by
// 2^(scale−127).
func mxfp4Dequant(blocks, scales []byte, experts, out, in int) []float32 {
	e2m1 := [8]float64{0, 0.5, 1, 1.5, 2, 3, 4, 6}
	code := func(c byte) float64 {
		v := e2m1[c&7]
		if c&8 != 0 {
			v = -v
		}
		return v
	}
	w := make([]float32, experts*out*in)
	for row := range experts * out {
		for b := range in / 32 {
			sc := math.Exp2(float64(scales[row*in/32+b]) - 127)
			for k := range 16 {
				v := blocks[(row*in/32+b)*16+k]
				w[row*in+32*b+2*k] = float32(code(v&0x0f) * sc)
				w[row*in+32*b+2*k+1] = float32(code(v>>4) * sc)
			}
		}
	}
	return w
}

// gptOssConfigJSON is openai/gpt-oss-20b's config.json keys at the tiny
// shapes (YaRN as published, both layer types, a short window).
func gptOssConfigJSON(s spec) string {
	types := make([]any, s.layers)
	for l := range types {
		types[l] = map[bool]string{true: "sliding_attention", false: "full_attention"}[l%2 == 0]
	}
	c := map[string]any{
		"architectures":           []any{"GptOssForCausalLM"},
		"model_type":              "gpt_oss",
		"attention_bias":          true,
		"attention_dropout":       0.0,
		"eos_token_id":            2,
		"pad_token_id":            0,
		"experts_per_token":       s.topK,
		"head_dim":                s.headDim,
		"hidden_act":              "silu",
		"hidden_size":             s.hidden,
		"initial_context_length":  4096,
		"initializer_range":       0.02,
		"intermediate_size":       s.moeInter,
		"layer_types":             types,
		"max_position_embeddings": s.maxPos,
		"num_attention_heads":     s.heads,
		"num_experts_per_tok":     s.topK,
		"num_hidden_layers":       s.layers,
		"num_key_value_heads":     s.kvHeads,
		"num_local_experts":       s.experts,
		"output_router_logits":    false,
		"rms_norm_eps":            1e-5,
		"rope_scaling": map[string]any{"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
			"original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": false},
		"rope_theta":           150000,
		"router_aux_loss_coef": 0.9,
		"sliding_window":       gptOssWindow,
		"swiglu_limit":         gptOssLimit,
		"tie_word_embeddings":  false,
		"torch_dtype":          map[bool]string{true: "bfloat16", false: "float32"}[s.bf16],
		"transformers_version": "4.55.0.dev0",
		"use_cache":            true,
		"vocab_size":           s.vocab,
	}
	if s.mxfp4 {
		c["quantization_config"] = map[string]any{"modules_to_not_convert": []any{"model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"}, "quant_method": "mxfp4"}
	}
	return pyJSON(c, "") + "\n"
}
