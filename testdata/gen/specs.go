package main

// arch selects the tensor set and config.json fields of one HF architecture.
type arch int

const (
	qwen3     arch = iota // q/k RMSNorm per head, no biases, explicit head_dim
	qwen2                 // q/k/v biases (always; Qwen2 configs have no attention_bias key)
	llama                 // Llama 3: llama3 rope scaling, no biases
	qwen3MoE              // Qwen3 attention; mixture-of-experts MLPs (router mlp.gate, mlp.experts.{e})
	qwen35                // Qwen3.5 (qwen3_5): hybrid gated DeltaNet / gated attention, dense MLP, nested text_config
	qwen35MoE             // Qwen3.5-MoE / Qwen3.6 (qwen3_5_moe): the same mixers, routed + shared experts
	glm4MoE               // GLM-4.5 / INTELLECT-3 (glm4_moe): sigmoid-routed experts, ungated shared experts (glm.go)
	nemotronH             // Nemotron-3 (nemotron_h): Mamba-2 / attention / relu² MoE / relu² MLP layers under backbone. (nemotron.go)
	gptOss                // gpt-oss (gpt_oss): sinks, sliding windows, YaRN, biased clamped-SwiGLU experts, MXFP4 (gptoss.go)
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
	// Qwen3.5 / Qwen3.5-MoE only (see qwen35.go).
	linKHeads, linVHeads int    // gated DeltaNet key (= query) heads and value heads
	linKDim, linVDim     int    // their head dims
	convK                int    // depthwise causal conv1d kernel
	sharedInter          int    // shared expert's intermediate size
	perExpert            bool   // experts as mlp.experts.{e}.{gate,up,down}_proj instead of fused 3-D tensors
	extras               bool   // tiny model.visual.* and mtp.* tensors a text-only loader must skip
	fused                bool   // GLM: experts as transformers' 3-D tensors instead of per expert
	mxfp4                bool   // gpt-oss: experts as MXFP4 blocks and scales instead of an f32 Parameter
	bf16Experts          bool   // gpt-oss: experts as bf16 Parameters (the other tensors f32)
	latent               int    // Nemotron-3: moe_latent_size (0: none, the experts read the hidden state)
	seed                 string // draw the weights as for this model (default: name), so two layouts share them
}

// seedName is the model name the weights' streams are seeded with.
func (s spec) seedName() string {
	if s.seed != "" {
		return s.seed
	}
	return s.name
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
	{name: "qwen3_5-tiny", arch: qwen35, tied: true, extras: true, vocab: 512, hidden: 64, layers: 4, heads: 4, kvHeads: 2, headDim: 32, intermediate: 128, maxPos: 512,
		linKHeads: 2, linVHeads: 4, linKDim: 16, linVDim: 24, convK: 4},
	{name: "qwen3_5-tiny-bf16", arch: qwen35, bf16: true, shards: 2, vocab: 512, hidden: 64, layers: 4, heads: 4, kvHeads: 2, headDim: 32, intermediate: 128, maxPos: 512,
		linKHeads: 2, linVHeads: 4, linKDim: 16, linVDim: 24, convK: 4},
	{name: "qwen3_5-moe-tiny", arch: qwen35MoE, vocab: 512, hidden: 64, layers: 4, heads: 4, kvHeads: 2, headDim: 32, maxPos: 512,
		linKHeads: 2, linVHeads: 4, linKDim: 16, linVDim: 24, convK: 4, experts: 8, topK: 2, moeInter: 32, sharedInter: 48},
	{name: "qwen3_5-moe-tiny-perexpert", seed: "qwen3_5-moe-tiny", perExpert: true, arch: qwen35MoE, vocab: 512, hidden: 64, layers: 4, heads: 4, kvHeads: 2, headDim: 32, maxPos: 512,
		linKHeads: 2, linVHeads: 4, linKDim: 16, linVDim: 24, convK: 4, experts: 8, topK: 2, moeInter: 32, sharedInter: 48},
	{name: "glm4_moe-tiny", arch: glm4MoE, vocab: 512, hidden: 64, layers: 3, heads: 4, kvHeads: 2, headDim: 32, intermediate: 128, maxPos: 512,
		experts: 8, topK: 2, moeInter: 32, sharedInter: 32},
	{name: "glm4_moe-tiny-fused", seed: "glm4_moe-tiny", fused: true, arch: glm4MoE, vocab: 512, hidden: 64, layers: 3, heads: 4, kvHeads: 2, headDim: 32, intermediate: 128, maxPos: 512,
		experts: 8, topK: 2, moeInter: 32, sharedInter: 32},
	{name: "gpt_oss-tiny", arch: gptOss, vocab: 512, hidden: 64, layers: 2, heads: 4, kvHeads: 2, headDim: 32, maxPos: 512,
		experts: 8, topK: 4, moeInter: 32},
	{name: "gpt_oss-tiny-bf16", seed: "gpt_oss-tiny", bf16Experts: true, arch: gptOss, vocab: 512, hidden: 64, layers: 2, heads: 4, kvHeads: 2, headDim: 32, maxPos: 512,
		experts: 8, topK: 4, moeInter: 32},
	{name: "gpt_oss-tiny-mxfp4", seed: "gpt_oss-tiny", mxfp4: true, arch: gptOss, vocab: 512, hidden: 64, layers: 2, heads: 4, kvHeads: 2, headDim: 32, maxPos: 512,
		experts: 8, topK: 4, moeInter: 32},
	{name: "nemotron_h-tiny", arch: nemotronH, vocab: 512, hidden: 64, layers: len(nemotronPattern), heads: 4, kvHeads: 2, headDim: 16,
		intermediate: 96, maxPos: 512, experts: 8, topK: 2, moeInter: 32, sharedInter: 48},
	{name: "nemotron_h-latent-tiny", arch: nemotronH, vocab: 512, hidden: 64, layers: len(nemotronPattern), heads: 4, kvHeads: 2, headDim: 16,
		intermediate: 96, maxPos: 512, experts: 8, topK: 2, moeInter: 32, sharedInter: 48, latent: 24},
	{name: "llama-tiny-bf16-sharded", arch: llama, bf16: true, tied: true, shards: 2, vocab: 512, hidden: 64, layers: 2, heads: 4, kvHeads: 1, headDim: 16, intermediate: 128, maxPos: 512, eosList: true},
}
