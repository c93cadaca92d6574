package model

import "encoding/json"

// GLM-4.5-Air's config.json (zai-org/GLM-4.5-Air; INTELLECT-3 is a
// post-train of it with the same config): 46 layers, the first dense
// (SwiGLU of 10944), the others 128 routed experts of 1408 (8 per token)
// and one shared; 96 query and 8 key-value heads of 128, half of each
// rotated; q/k/v with bias. Parsed as a checkpoint's config is, so the GLM
// keys map onto the shared ones as Load maps them (validateGLM). The MTP
// layer past num_hidden_layers is not loaded and not counted.
const glm45AirConfig = `{"architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe",
	"hidden_size": 4096, "intermediate_size": 10944, "num_hidden_layers": 46,
	"num_attention_heads": 96, "num_key_value_heads": 8, "head_dim": 128,
	"vocab_size": 151552, "max_position_embeddings": 131072, "rope_theta": 1000000,
	"partial_rotary_factor": 0.5, "attention_bias": true, "use_qk_norm": false,
	"rms_norm_eps": 1e-05, "hidden_act": "silu", "tie_word_embeddings": false,
	"n_routed_experts": 128, "n_shared_experts": 1, "num_experts_per_tok": 8,
	"moe_intermediate_size": 1408, "first_k_dense_replace": 1, "norm_topk_prob": true,
	"routed_scaling_factor": 1.0, "n_group": 1, "topk_group": 1,
	"num_nextn_predict_layers": 1, "torch_dtype": "bfloat16"}`

func init() {
	var raw json.RawMessage = []byte(glm45AirConfig)
	c, err := ParseConfig(raw)
	if err != nil {
		panic("model: the GLM-4.5-Air shape: " + err.Error())
	}
	Shapes["glm-4.5-air"] = *c
	Shapes["intellect-3"] = *c
}
