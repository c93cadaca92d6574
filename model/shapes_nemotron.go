package model

// Nemotron-3 shapes: nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16's
// config.json as published (its keys that define the computation; the
// same values the vLLM, Megatron-Bridge and JAX ports' tests carry): 52
// layers, 23 Mamba-2 (64 heads of 64, 8 groups, state 128), 23 MoE (128
// relu² experts of 1856, 6 per token, a shared expert of 3712, sigmoid
// routing scaled 2.5) and 6 attention layers (32 heads, 2 KV heads of
// 128, no RoPE). Parsed by the nemotron_h reader, so the shape is what a
// download of the checkpoint would give.
const nemotronNanoConfig = `{
  "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "attention_bias": false,
  "bos_token_id": 1, "chunk_size": 128, "conv_kernel": 4, "eos_token_id": 2, "expand": 2, "head_dim": 128,
  "hidden_size": 2688, "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
  "intermediate_size": 1856, "layer_norm_epsilon": 1e-05, "mamba_head_dim": 64, "mamba_hidden_act": "silu",
  "mamba_num_heads": 64, "mamba_proj_bias": false, "max_position_embeddings": 262144, "mlp_bias": false,
  "mlp_hidden_act": "relu2", "moe_intermediate_size": 1856, "moe_shared_expert_intermediate_size": 3712,
  "n_group": 1, "n_groups": 8, "n_routed_experts": 128, "n_shared_experts": 1, "norm_eps": 1e-05,
  "norm_topk_prob": true, "num_attention_heads": 32, "num_experts_per_tok": 6, "num_hidden_layers": 52,
  "num_key_value_heads": 2, "partial_rotary_factor": 1.0, "rope_theta": 10000, "routed_scaling_factor": 2.5,
  "sliding_window": null, "ssm_state_size": 128, "tie_word_embeddings": false, "time_step_floor": 0.0001,
  "time_step_max": 0.1, "time_step_min": 0.001, "topk_group": 1, "torch_dtype": "bfloat16", "use_bias": false,
  "use_conv_bias": true, "vocab_size": 131072
}`

// nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16's config.json keys that
// define the computation, as the ports that load the checkpoint carry them
// (Megatron-Bridge's and TensorRT-LLM's tests, slime's and NeMo-RL's
// launch scripts, llama.cpp/MLX ports' signature checks; the config.json
// itself was not at hand to read): 88 layers, 40 Mamba-2 (128 heads of 64,
// 8 groups, state 128), 40 latent MoE (512 relu² experts of 2688 in a
// latent space of 1024, 22 per token, a shared expert of 5376 on the
// hidden state, sigmoid routing scaled 5.0 without groups) and 8
// attention layers (32 heads, 2 KV heads of 128); hidden 4096, vocabulary
// 131072. Not confirmed by a second source and left out or at
// NemotronHConfig's defaults since nothing here reads them:
// intermediate_size (no dense "-" layer), max_position_embeddings (262144
// in one port, 1048576 in another; the estimate takes the run's lengths).
// Its MTP layers (num_nextn_predict_layers 1, under mtp.) are skipped.
const nemotronSuperConfig = `{
  "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "attention_bias": false,
  "chunk_size": 128, "conv_kernel": 4, "expand": 2, "head_dim": 128, "hidden_size": 4096,
  "hybrid_override_pattern": "MEMEMEM*EMEMEMEM*EMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEM*EMEMEMEME",
  "layer_norm_epsilon": 1e-05, "mamba_head_dim": 64, "mamba_hidden_act": "silu", "mamba_num_heads": 128,
  "mamba_proj_bias": false, "max_position_embeddings": 262144, "mlp_bias": false, "mlp_hidden_act": "relu2",
  "moe_intermediate_size": 2688, "moe_latent_size": 1024, "moe_shared_expert_intermediate_size": 5376,
  "n_group": 1, "n_groups": 8, "n_routed_experts": 512, "n_shared_experts": 1, "norm_topk_prob": true,
  "num_attention_heads": 32, "num_experts_per_tok": 22, "num_hidden_layers": 88, "num_key_value_heads": 2,
  "num_nextn_predict_layers": 1, "rope_theta": 10000, "routed_scaling_factor": 5.0, "ssm_state_size": 128,
  "tie_word_embeddings": false, "topk_group": 1, "torch_dtype": "bfloat16", "use_bias": false,
  "use_conv_bias": true, "vocab_size": 131072
}`

func init() {
	for _, s := range []struct{ name, json string }{
		// 31.6B parameters, 3.6B active per token (the paper's counts).
		{"nemotron-3-nano-30b-a3b", nemotronNanoConfig},
		// 120.7B parameters, 12.8B active per token (TestNemotronSuperShape).
		{"nemotron-3-super-120b-a12b", nemotronSuperConfig},
	} {
		c, err := ParseConfig([]byte(s.json))
		if err != nil {
			panic("model: shape " + s.name + ": " + err.Error())
		}
		Shapes[s.name] = *c
	}
}
