package model

// Qwen3.5 / Qwen3.6 text-model shapes. Attention and MLP sizes are those
// of the published checkpoints (as slime's scripts/models/qwen3.5-4B.sh
// and qwen3.5-35B-A3B.sh list them; Qwen3.6-35B-A3B has Qwen3.5-35B-A3B's
// topology); the DeltaNet sizes are Qwen3_5TextConfig's defaults, which
// those checkpoints use.
func init() {
	delta := HybridConfig{FullAttentionInterval: 4, LinearConvKernel: 4, LinearKeyHeadDim: 128,
		LinearValueHeadDim: 128, LinearNumKeyHeads: 16, LinearNumValueHeads: 32, PartialRotaryFactor: 0.25}
	Shapes["qwen3.5-4b"] = Config{ModelType: "qwen3_5", HiddenSize: 2560, IntermediateSize: 9216, NumLayers: 32,
		NumHeads: 16, NumKVHeads: 4, HeadDim: 256, VocabSize: 248320, RMSNormEps: 1e-6,
		RopeTheta: 1e7, MaxPositions: 262144, TieWordEmbeddings: true, HiddenAct: "silu", TorchDType: "bfloat16",
		HybridConfig: delta}
	// ~30M parameters, Qwen3.5 layout: the CPU benchmark hybrid (as
	// qwen3-30m is for Qwen3).
	small := HybridConfig{FullAttentionInterval: 4, LinearConvKernel: 4, LinearKeyHeadDim: 64,
		LinearValueHeadDim: 64, LinearNumKeyHeads: 4, LinearNumValueHeads: 8, PartialRotaryFactor: 0.25}
	Shapes["qwen3.5-30m"] = Config{ModelType: "qwen3_5", HiddenSize: 512, IntermediateSize: 1536, NumLayers: 8,
		NumHeads: 8, NumKVHeads: 2, HeadDim: 64, VocabSize: 8192, RMSNormEps: 1e-6,
		RopeTheta: 1e7, MaxPositions: 4096, TieWordEmbeddings: true, HiddenAct: "silu", HybridConfig: small}
	moe := delta
	moe.SharedExpertIntermediateSize = 512
	Shapes["qwen3.6-35b-a3b"] = Config{ModelType: "qwen3_5_moe", HiddenSize: 2048, NumLayers: 40,
		NumHeads: 16, NumKVHeads: 2, HeadDim: 256, VocabSize: 248320, RMSNormEps: 1e-6,
		RopeTheta: 1e7, MaxPositions: 262144, HiddenAct: "silu", TorchDType: "bfloat16",
		MoEConfig: MoEConfig{NumExperts: 256, NumExpertsPerTok: 8, MoEIntermediateSize: 512, NormTopKProb: true,
			DecoderSparseStep: 1, RouterAuxLossCoef: 0.001},
		HybridConfig: moe}
	// Qwen/Qwen3.5-122B-A10B and Qwen3.5-397B-A17B (text model): 48 and 60
	// layers (every fourth full attention), 32 query and 2 key-value heads
	// of 256, 256 experts of 1024 (8 per token) and 512 (10 per token),
	// a shared expert of 1024, untied head; their DeltaNet has 64 value
	// heads. The 397B's attention and MoE sizes are slime's
	// scripts/models/qwen3.5-397B-A17B.sh's.
	big := delta
	big.LinearNumValueHeads = 64
	big.SharedExpertIntermediateSize = 1024
	qwen35MoE := func(hidden, layers, experts, perTok int) Config {
		return Config{ModelType: "qwen3_5_moe", HiddenSize: hidden, NumLayers: layers,
			NumHeads: 32, NumKVHeads: 2, HeadDim: 256, VocabSize: 248320, RMSNormEps: 1e-6,
			RopeTheta: 1e7, MaxPositions: 262144, HiddenAct: "silu", TorchDType: "bfloat16",
			MoEConfig: MoEConfig{NumExperts: experts, NumExpertsPerTok: perTok, MoEIntermediateSize: 1024, NormTopKProb: true,
				DecoderSparseStep: 1, RouterAuxLossCoef: 0.001},
			HybridConfig: big}
	}
	Shapes["qwen3.5-122b-a10b"] = qwen35MoE(3072, 48, 256, 8)
	Shapes["qwen3.5-397b-a17b"] = qwen35MoE(4096, 60, 512, 10)
}
