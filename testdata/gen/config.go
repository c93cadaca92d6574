package main

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// configJSON returns config.json for s with the keys transformers writes
// for real checkpoints of the architecture (Qwen3-0.6B, Qwen2.5-0.5B,
// Llama-3.2-1B), including their quirks: Qwen2 has neither head_dim nor
// attention_bias; Qwen3's rope_theta is an integer; Llama's rope_scaling is
// a llama3 object.
func configJSON(s spec) string {
	if s.arch == qwen35 || s.arch == qwen35MoE {
		return qwen35ConfigJSON(s)
	}
	if s.arch == glm4MoE {
		return glmConfigJSON(s)
	}
	if s.arch == nemotronH {
		return nemotronConfigJSON(s)
	}
	if s.arch == gptOss {
		return gptOssConfigJSON(s)
	}
	dtype := "float32"
	if s.bf16 {
		dtype = "bfloat16"
	}
	c := map[string]any{
		"attention_dropout":       0.0,
		"bos_token_id":            1,
		"eos_token_id":            2,
		"hidden_act":              "silu",
		"hidden_size":             s.hidden,
		"initializer_range":       0.02,
		"intermediate_size":       s.intermediate,
		"max_position_embeddings": s.maxPos,
		"num_attention_heads":     s.heads,
		"num_hidden_layers":       s.layers,
		"num_key_value_heads":     s.kvHeads,
		"tie_word_embeddings":     s.tied,
		"torch_dtype":             dtype,
		"transformers_version":    "4.51.0",
		"use_cache":               true,
		"vocab_size":              s.vocab,
	}
	if s.eosList {
		c["eos_token_id"] = []any{2, 3}
	}
	switch s.arch {
	case qwen3:
		c["architectures"] = []any{"Qwen3ForCausalLM"}
		c["model_type"] = "qwen3"
		c["attention_bias"] = false
		c["head_dim"] = s.headDim
		c["max_window_layers"] = s.layers
		c["rms_norm_eps"] = 1e-6
		c["rope_scaling"] = nil
		c["rope_theta"] = 1000000
		c["sliding_window"] = nil
		c["use_sliding_window"] = false
	case qwen3MoE:
		// Qwen3-30B-A3B's keys.
		c["architectures"] = []any{"Qwen3MoeForCausalLM"}
		c["model_type"] = "qwen3_moe"
		c["attention_bias"] = false
		c["head_dim"] = s.headDim
		c["max_window_layers"] = s.layers
		c["rms_norm_eps"] = 1e-6
		c["rope_scaling"] = nil
		c["rope_theta"] = 1000000
		c["sliding_window"] = nil
		c["use_sliding_window"] = false
		c["decoder_sparse_step"] = 1
		mlpOnly := []any{}
		for _, l := range s.mlpOnly {
			mlpOnly = append(mlpOnly, l)
		}
		c["mlp_only_layers"] = mlpOnly
		c["moe_intermediate_size"] = s.moeInter
		c["norm_topk_prob"] = s.normTopK
		c["num_experts"] = s.experts
		c["num_experts_per_tok"] = s.topK
		c["output_router_logits"] = false
		c["router_aux_loss_coef"] = 0.001
	case qwen2:
		c["architectures"] = []any{"Qwen2ForCausalLM"}
		c["model_type"] = "qwen2"
		c["max_window_layers"] = s.layers
		c["rms_norm_eps"] = 1e-6
		c["rope_scaling"] = nil
		c["rope_theta"] = 1000000.0
		c["sliding_window"] = s.maxPos
		c["use_sliding_window"] = false
	case llama:
		c["architectures"] = []any{"LlamaForCausalLM"}
		c["model_type"] = "llama"
		c["attention_bias"] = false
		c["head_dim"] = s.headDim
		c["mlp_bias"] = false
		c["pretraining_tp"] = 1
		c["rms_norm_eps"] = 1e-5
		c["rope_scaling"] = map[string]any{
			"factor":                           8.0,
			"high_freq_factor":                 4.0,
			"low_freq_factor":                  1.0,
			"original_max_position_embeddings": 64,
			"rope_type":                        "llama3",
		}
		c["rope_theta"] = 500000.0
	}
	return pyJSON(c, "") + "\n"
}

// pyJSON renders v as Python's json.dumps(v, indent=2, sort_keys=True)
// does, which is how transformers writes config.json: floats in Python repr
// (1e-06, 8.0), ints bare, nested containers indented, empty ones inline.
func pyJSON(v any, indent string) string {
	inner := indent + "  "
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case int:
		return strconv.Itoa(v)
	case float64:
		return pyFloat(v)
	case string:
		b, _ := json.Marshal(v) // a Go string always marshals
		return string(b)
	case []any:
		if len(v) == 0 {
			return "[]"
		}
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = inner + pyJSON(e, inner)
		}
		return "[\n" + strings.Join(parts, ",\n") + "\n" + indent + "]"
	case map[string]any:
		if len(v) == 0 {
			return "{}"
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = inner + pyJSON(k, inner) + ": " + pyJSON(v[k], inner)
		}
		return "{\n" + strings.Join(parts, ",\n") + "\n" + indent + "}"
	}
	panic(fmt.Sprintf("pyJSON: unsupported %T", v)) // a bug in this generator's literals
}

// pyFloat is Python's float repr: the shortest round-tripping digits, in
// fixed notation with a ".0" for integral values when 1e-4 <= |f| < 1e16,
// else scientific with a two-digit exponent (1e-06).
func pyFloat(f float64) string {
	if a := math.Abs(f); a != 0 && (a < 1e-4 || a >= 1e16) {
		return strconv.FormatFloat(f, 'e', -1, 64) // Go also pads the exponent to two digits
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}
