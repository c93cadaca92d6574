package model

import (
	"slices"
	"sort"
)

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
	// Qwen/Qwen3-4B's config.json (4.0B parameters, tied embeddings).
	"qwen3-4b": {ModelType: "qwen3", HiddenSize: 2560, IntermediateSize: 9728, NumLayers: 36,
		NumHeads: 32, NumKVHeads: 8, HeadDim: 128, VocabSize: 151936, RMSNormEps: 1e-6,
		RopeTheta: 1e6, MaxPositions: 40960, TieWordEmbeddings: true, HiddenAct: "silu", TorchDType: "bfloat16"},
	// Qwen/Qwen3-8B's config.json: the one-H200 training target.
	"qwen3-8b": {ModelType: "qwen3", HiddenSize: 4096, IntermediateSize: 12288, NumLayers: 36,
		NumHeads: 32, NumKVHeads: 8, HeadDim: 128, VocabSize: 151936, RMSNormEps: 1e-6,
		RopeTheta: 1e6, MaxPositions: 40960, HiddenAct: "silu", TorchDType: "bfloat16"},
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
	// GLM's dense first layers (mlp_only_layers), in a fresh slice.
	c.MLPOnlyLayers = slices.Clone(c.MLPOnlyLayers)
	if c.Arch().GptOssExperts {
		// Its windows resolved from the default layer_types, into a
		// fresh slice.
		if err := c.validateGptOss(c.Arch()); err != nil {
			panic("model: shape " + name + ": " + err.Error())
		}
	}
	if c.Arch().Hybrid {
		c.LayerTypes = nil // resolved from the interval, into a fresh slice
		if err := c.validateHybrid(c.Arch()); err != nil {
			panic("model: shape " + name + ": " + err.Error())
		}
	}
	return &c, true
}
