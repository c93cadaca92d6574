package model

import "sort"

// Shapes are named model shapes for benchmarks and memory estimates: the
// real configs of popular checkpoints, plus small ones for CPU runs.
var Shapes = map[string]Config{
	// ~30M parameters, Qwen3 layout: the CPU benchmark model.
	"qwen3-30m": {ModelType: "qwen3", HiddenSize: 512, IntermediateSize: 1536, NumLayers: 8,
		NumHeads: 8, NumKVHeads: 4, HeadDim: 64, VocabSize: 8192, RMSNormEps: 1e-6,
		RopeTheta: 1e6, MaxPositions: 4096, TieWordEmbeddings: true, HiddenAct: "silu"},
	"qwen3-0.6b": {ModelType: "qwen3", HiddenSize: 1024, IntermediateSize: 3072, NumLayers: 28,
		NumHeads: 16, NumKVHeads: 8, HeadDim: 128, VocabSize: 151936, RMSNormEps: 1e-6,
		RopeTheta: 1e6, MaxPositions: 40960, TieWordEmbeddings: true, HiddenAct: "silu"},
	"qwen3-1.7b": {ModelType: "qwen3", HiddenSize: 2048, IntermediateSize: 6144, NumLayers: 28,
		NumHeads: 16, NumKVHeads: 8, HeadDim: 128, VocabSize: 151936, RMSNormEps: 1e-6,
		RopeTheta: 1e6, MaxPositions: 40960, TieWordEmbeddings: true, HiddenAct: "silu"},
	// Qwen/Qwen3-30B-A3B-Instruct-2507: 48 sparse layers of 128 experts,
	// 8 per token (30.5B parameters, 3.35B active per token).
	"qwen3-30b-a3b": {ModelType: "qwen3_moe", HiddenSize: 2048, IntermediateSize: 6144, NumLayers: 48,
		NumHeads: 32, NumKVHeads: 4, HeadDim: 128, VocabSize: 151936, RMSNormEps: 1e-6,
		RopeTheta: 1e7, MaxPositions: 262144, HiddenAct: "silu",
		MoEConfig: MoEConfig{NumExperts: 128, NumExpertsPerTok: 8, MoEIntermediateSize: 768, NormTopKProb: true,
			DecoderSparseStep: 1, RouterAuxLossCoef: 0.001}},
	// Qwen/Qwen3-235B-A22B: 94 sparse layers of 128 experts, 8 per token
	// (235B parameters, 22.2B active).
	"qwen3-235b-a22b": {ModelType: "qwen3_moe", HiddenSize: 4096, IntermediateSize: 12288, NumLayers: 94,
		NumHeads: 64, NumKVHeads: 4, HeadDim: 128, VocabSize: 151936, RMSNormEps: 1e-6,
		RopeTheta: 1e6, MaxPositions: 40960, HiddenAct: "silu",
		MoEConfig: MoEConfig{NumExperts: 128, NumExpertsPerTok: 8, MoEIntermediateSize: 1536, NormTopKProb: true,
			DecoderSparseStep: 1, RouterAuxLossCoef: 0.001}},
	// A Qwen3-MoE small enough for CPU runs of grpo bench (smoke tests):
	// 16 experts, 4 per token.
	"qwen3-moe-9m": {ModelType: "qwen3_moe", HiddenSize: 256, IntermediateSize: 768, NumLayers: 4,
		NumHeads: 4, NumKVHeads: 2, HeadDim: 64, VocabSize: 8192, RMSNormEps: 1e-6,
		RopeTheta: 1e6, MaxPositions: 4096, TieWordEmbeddings: true, HiddenAct: "silu",
		MoEConfig: MoEConfig{NumExperts: 16, NumExpertsPerTok: 4, MoEIntermediateSize: 128, NormTopKProb: true,
			DecoderSparseStep: 1}},
	"qwen2.5-0.5b": {ModelType: "qwen2", HiddenSize: 896, IntermediateSize: 4864, NumLayers: 24,
		NumHeads: 14, NumKVHeads: 2, HeadDim: 64, VocabSize: 151936, RMSNormEps: 1e-6,
		RopeTheta: 1e6, MaxPositions: 32768, TieWordEmbeddings: true, HiddenAct: "silu"},
	"llama-3.2-1b": {ModelType: "llama", HiddenSize: 2048, IntermediateSize: 8192, NumLayers: 16,
		NumHeads: 32, NumKVHeads: 8, HeadDim: 64, VocabSize: 128256, RMSNormEps: 1e-5,
		RopeTheta: 500000, MaxPositions: 131072, TieWordEmbeddings: true, HiddenAct: "silu",
		RopeScaling: &RopeScaling{Type: "llama3", Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}},
}

// ShapeNames lists the named shapes, sorted.
func ShapeNames() []string {
	var out []string
	for n := range Shapes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Shape returns a copy of a named shape's config.
func Shape(name string) (*Config, bool) {
	c, ok := Shapes[name]
	if !ok {
		return nil, false
	}
	if c.RopeScaling != nil {
		rs := *c.RopeScaling
		c.RopeScaling = &rs
	}
	c.MLPOnlyLayers = append([]int(nil), c.MLPOnlyLayers...)
	return &c, true
}
