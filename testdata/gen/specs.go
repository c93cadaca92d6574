package main

// arch selects the tensor set and config.json fields of one HF architecture.
type arch int

const (
	qwen3    arch = iota // q/k RMSNorm per head, no biases, explicit head_dim
	qwen2                // q/k/v biases (always; Qwen2 configs have no attention_bias key)
	llama                // Llama 3: llama3 rope scaling, no biases
	qwen3MoE             // Qwen3 attention; mixture-of-experts MLPs (router mlp.gate, mlp.experts.{e})
)

// spec is one tiny model. Shapes are small enough that every model is well
// under 1 MB yet keeps the features that break naive implementations:
// head_dim ≠ hidden/heads (Qwen3), GQA, untied heads, bf16, shards.
type spec struct {
	name         string
	arch         arch
	bf16         bool
	tied         bool
	shards       int // 0: one model.safetensors; n: n files plus an index
	vocab        int
	hidden       int
	layers       int
	heads        int
	kvHeads      int
	headDim      int
	intermediate int
	maxPos       int
	eosList      bool // eos_token_id as a list, as Llama 3 Instruct configs have it
	// Qwen3-MoE only.
	experts, topK, moeInter int
	normTopK                bool
	mlpOnly                 []int // dense layers (mlp_only_layers)
}

var specs = []spec{
	{name: "qwen3-tiny", arch: qwen3, tied: true, vocab: 512, hidden: 64, layers: 2, heads: 4, kvHeads: 2, headDim: 32, intermediate: 128, maxPos: 512},
	{name: "qwen3-tiny-bf16", arch: qwen3, bf16: true, vocab: 512, hidden: 64, layers: 2, heads: 4, kvHeads: 2, headDim: 32, intermediate: 128, maxPos: 512},
	{name: "qwen2-tiny", arch: qwen2, vocab: 512, hidden: 64, layers: 2, heads: 4, kvHeads: 4, headDim: 16, intermediate: 128, maxPos: 512},
	{name: "llama-tiny", arch: llama, vocab: 512, hidden: 64, layers: 2, heads: 4, kvHeads: 1, headDim: 16, intermediate: 128, maxPos: 512},
	{name: "qwen3-moe-tiny", arch: qwen3MoE, vocab: 512, hidden: 64, layers: 2, heads: 4, kvHeads: 2, headDim: 32, intermediate: 128, maxPos: 512,
		experts: 8, topK: 2, moeInter: 32, normTopK: true},
	{name: "qwen3-moe-tiny-dense", arch: qwen3MoE, tied: true, vocab: 512, hidden: 64, layers: 3, heads: 4, kvHeads: 2, headDim: 32, intermediate: 128, maxPos: 512,
		experts: 4, topK: 2, moeInter: 32, mlpOnly: []int{1}},
	{name: "qwen3-moe-tiny-bf16", arch: qwen3MoE, bf16: true, vocab: 512, hidden: 64, layers: 2, heads: 4, kvHeads: 2, headDim: 32, intermediate: 128, maxPos: 512,
		experts: 8, topK: 2, moeInter: 32, normTopK: true},
	{name: "llama-tiny-bf16-sharded", arch: llama, bf16: true, tied: true, shards: 2, vocab: 512, hidden: 64, layers: 2, heads: 4, kvHeads: 1, headDim: 16, intermediate: 128, maxPos: 512, eosList: true},
}
