package model

// The Qwen3-MoE shapes of Shapes (here so that the dense ones' file stays
// as it is): the real configs of the hub checkpoints, and one small enough
// for CPU smoke runs of grpo bench. None has mlp_only_layers, so Shape's
// copy shares no slice with the map.
func init() {
	moe := func(experts, perTok, inter int) MoEConfig {
		return MoEConfig{NumExperts: experts, NumExpertsPerTok: perTok, MoEIntermediateSize: inter, NormTopKProb: true,
			DecoderSparseStep: 1, RouterAuxLossCoef: 0.001}
	}
	// Qwen/Qwen3-30B-A3B-Instruct-2507: 48 sparse layers of 128 experts,
	// 8 per token (30.5B parameters, 3.35B active per token).
	Shapes["qwen3-30b-a3b"] = Config{ModelType: "qwen3_moe", HiddenSize: 2048, IntermediateSize: 6144, NumLayers: 48,
		NumHeads: 32, NumKVHeads: 4, HeadDim: 128, VocabSize: 151936, RMSNormEps: 1e-6,
		RopeTheta: 1e7, MaxPositions: 262144, HiddenAct: "silu", MoEConfig: moe(128, 8, 768)}
	// Qwen/Qwen3-235B-A22B: 94 sparse layers of 128 experts, 8 per token
	// (235B parameters, 22.2B active).
	Shapes["qwen3-235b-a22b"] = Config{ModelType: "qwen3_moe", HiddenSize: 4096, IntermediateSize: 12288, NumLayers: 94,
		NumHeads: 64, NumKVHeads: 4, HeadDim: 128, VocabSize: 151936, RMSNormEps: 1e-6,
		RopeTheta: 1e6, MaxPositions: 40960, HiddenAct: "silu", MoEConfig: moe(128, 8, 1536)}
	// 9.2M parameters (4.5M active), 16 experts of which 4 per token.
	Shapes["qwen3-moe-9m"] = Config{ModelType: "qwen3_moe", HiddenSize: 256, IntermediateSize: 768, NumLayers: 4,
		NumHeads: 4, NumKVHeads: 2, HeadDim: 64, VocabSize: 8192, RMSNormEps: 1e-6,
		RopeTheta: 1e6, MaxPositions: 4096, TieWordEmbeddings: true, HiddenAct: "silu", MoEConfig: moe(16, 4, 128)}
}
