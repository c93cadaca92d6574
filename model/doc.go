// Package model owns the transformer architectures grpo trains — Qwen3,
// Qwen3-MoE, Qwen2 (Qwen2.5), Llama 3, Qwen3.5, Qwen3.5-MoE, GLM-4.5
// (INTELLECT-3) and gpt-oss — read from
// Hugging Face model directories (config.json + safetensors) and run as an
// explicit forward and backward pass over a kernels.Backend, llm.c style:
// no autograd engine, every op a Backend call.
//
// An architecture is a list of decoder layers, each composed of blocks
// (block.go): an input norm, a token mixer (attention with its variants,
// block_attention.go; gated DeltaNet, block_deltanet.go), a post norm and
// a channel mixer (dense SwiGLU, block_swiglu.go; mixture of experts with
// an optional shared expert, softmax or GLM-4.5's sigmoid routing,
// gpt-oss's biases and clamped SwiGLU, block_moe.go). Each block owns its forward,
// its explicit backward, what it recomputes under each Recompute policy,
// its buffers (inference, training, backward scratch: the lists the
// passes allocate and the exported sizes sum), its weights, its LoRA
// targets and its per-layer cache kind (paged KV or recurrent state). The
// passes and sizes loop over the layers calling the blocks' methods.
//
// Adding a family is its config reader plus any new block: register its
// model_type in archs (config.go) with the flags of the variants it uses,
// read its keys into Config (layer kinds, MoE settings, shapes), and let
// Config.decoderLayer map each layer to its blocks. A family whose layers
// are all existing blocks needs nothing more; a new kind of layer (say
// Mamba-2) is a new type implementing tokenMixer or channelMixer in its
// own file, with its weights' tensor names, and a case in decoderLayer.
//
// Batches are packed: a Batch lists the new tokens of many sequences at
// once, each token tagged with its sequence's KV-cache slot and its position
// in that sequence. The same Forward call therefore serves prefill (many
// tokens of one or more sequences), batched decode (one token for each of
// many sequences, each at its own position) and training over packed
// sequences of different lengths, with no padding.
//
// A mixture-of-experts model can train expert parallel (moe_ep.go): each
// rank of a kernels.Collective loads and holds its share of the experts
// (LoadExperts), and each sparse layer exchanges its routed rows with the
// experts' ranks (moe_ep_exchange.go); everything else runs as on one
// device, on the rank's own tokens.
//
// Weight names are exactly those of Hugging Face transformers
// (model.layers.N.self_attn.q_proj.weight, …), so real checkpoints load
// unchanged. model never samples, scores or trains.
package model
