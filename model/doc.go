// Package model owns the transformer architectures grpo trains — Qwen3,
// Qwen2 (Qwen2.5) and Llama 3 — read from Hugging Face model directories
// (config.json + safetensors) and run as an explicit forward pass over a
// kernels.Backend, llm.c style: no autograd engine, every op a Backend call.
//
// Batches are packed: a Batch lists the new tokens of many sequences at
// once, each token tagged with its sequence's KV-cache slot and its position
// in that sequence. The same Forward call therefore serves prefill (many
// tokens of one or more sequences), batched decode (one token for each of
// many sequences, each at its own position) and training over packed
// sequences of different lengths, with no padding.
//
// Weight names are exactly those of Hugging Face transformers
// (model.layers.N.self_attn.q_proj.weight, …), so real checkpoints load
// unchanged. model never samples, scores or trains.
package model
