package model

// gpt-oss shapes: openai/gpt-oss-20b's and -120b's config.json (24 and 36
// layers alternating sliding-window (128) and full attention, 32 and 128
// experts of which 4 per token, YaRN ×32 over 4096 positions). The
// experts are MXFP4, which a GPU keeps MXFP4 (4.25 bits an element) and
// the CPU dequantizes to bf16; the estimate prices each.
func init() {
	oss := func(layers, experts int) Config {
		window := 128
		return Config{ModelType: "gpt_oss", HiddenSize: 2880, IntermediateSize: 2880, NumLayers: layers,
			NumHeads: 64, NumKVHeads: 8, HeadDim: 64, VocabSize: 201088, RMSNormEps: 1e-5,
			RopeTheta: 150000, MaxPositions: 131072, AttentionBias: true, HiddenAct: "silu", TorchDType: "bfloat16",
			RopeScaling: &RopeScaling{Type: "yarn", Factor: 32, BetaFast: 32, BetaSlow: 1, Truncate: new(bool), OriginalMaxPositionEmbeddings: 4096},
			MoEConfig: MoEConfig{NumExperts: experts, NumExpertsPerTok: 4, MoEIntermediateSize: 2880, NormTopKProb: true,
				DecoderSparseStep: 1, RouterAuxLossCoef: 0.9},
			GptOssConfig: GptOssConfig{NumLocalExperts: experts, SwigluLimit: 7, SwigluAlpha: 1.702, Window: &window,
				QuantizationConfig: &struct {
					QuantMethod string `json:"quant_method"`
				}{"mxfp4"}}}
	}
	// openai/gpt-oss-20b: 20.9B parameters, 3.6B active per token.
	Shapes["gpt-oss-20b"] = oss(24, 32)
	// openai/gpt-oss-120b: 116.8B parameters, 5.1B active per token.
	Shapes["gpt-oss-120b"] = oss(36, 128)
}
