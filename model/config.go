package model

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
)

// Arch describes one supported architecture family.
type Arch struct {
	ModelType string // config.json "model_type"
	Name      string
	// QKNorm: per-head RMSNorm of queries and keys before RoPE (Qwen3).
	QKNorm bool
	// QKVBias: q/k/v projections always carry a bias (Qwen2), whatever
	// attention_bias says.
	QKVBias bool
	// BiasNotO: attention_bias gives q/k/v biases and none to o_proj
	// (GLM-4.5); elsewhere it gives all four (Llama).
	BiasNotO bool
	// MoE: the MLP of sparse layers is a mixture of experts (Qwen3-MoE).
	MoE bool
	// Hybrid: layers mix tokens by full attention or gated DeltaNet, as
	// layer_types says (HybridConfig); Qwen3.5 and Qwen3.6.
	Hybrid bool
	// ZeroCentredNorm: RMSNorm weights are stored as w with the scale 1 +
	// w (Qwen3.5's decoder, q/k and final norms); Load adds the 1.
	ZeroCentredNorm bool
	// OutputGate: q_proj is twice as wide, each head [query | gate], and
	// attention's output is multiplied by sigmoid(gate) before o_proj.
	OutputGate bool
	// Nested: config.json keeps the text model's keys under text_config
	// and the checkpoint its tensors under model.language_model.
	// (Qwen3_5ForConditionalGeneration); vision and MTP tensors are
	// skipped.
	Nested bool
	// SigmoidRouter: sparse layers route by sigmoid scores with a
	// correction bias and group-limited top-k, their shared experts
	// ungated, the dense layers the first first_k_dense_replace
	// (GLMMoEConfig; GLM-4.5).
	SigmoidRouter bool
	// PartialRotary: partial_rotary_factor applies to every attention
	// layer (GLM-4.5, default DefaultPartialRotary).
	PartialRotary bool
	// DefaultPartialRotary is partial_rotary_factor where config.json
	// leaves it out (0: rotate whole heads).
	DefaultPartialRotary float64
	// Nemotron: each layer is one block behind one pre-norm, as
	// hybrid_override_pattern says (NemotronConfig): Mamba-2, attention
	// without RoPE, relu² experts with a sigmoid router (SigmoidRouter's)
	// and an ungated shared relu² MLP, or a dense relu² MLP; the
	// checkpoint's tensors under backbone. (model. in transformers'
	// current class).
	Nemotron bool
	// GptOssExperts: every layer is sparse, its router a Linear with a
	// bias (top-k of the logits, softmax over the chosen), its experts
	// with biases and the clamped SwiGLU (kernels.ClampedGLU), stored
	// [experts, in, out] with gate and up interleaved, in bf16 or MXFP4
	// (gpt-oss).
	GptOssExperts bool
	Example       string // a hub id of a real model of this family
	// ToolCalls names the tool-call format its checkpoints' chat
	// templates write (tokenizer.ToolCallFormat's String, vLLM's
	// --tool-call-parser); grpo reads a model's calls in the format its
	// own template shows, and lists this one in grpo models.
	ToolCalls string
	// Partial, when not "", says what of the family works so far; ""
	// means everything (train, sample, eval, serve).
	Partial string
}

var archs = map[string]Arch{
	"qwen3":     {ModelType: "qwen3", Name: "Qwen3", QKNorm: true, Example: "Qwen/Qwen3-0.6B", ToolCalls: "hermes"},
	"qwen3_moe": {ModelType: "qwen3_moe", Name: "Qwen3-MoE", QKNorm: true, MoE: true, Example: "Qwen/Qwen3-30B-A3B-Instruct-2507", ToolCalls: "hermes"},
	"qwen2":     {ModelType: "qwen2", Name: "Qwen2 / Qwen2.5", QKVBias: true, Example: "Qwen/Qwen2.5-0.5B-Instruct", ToolCalls: "hermes"},
	"llama":     {ModelType: "llama", Name: "Llama 3 (also Llama 2 layout)", Example: "meta-llama/Llama-3.2-1B-Instruct", ToolCalls: "llama3-json"},
	"qwen3_5": {ModelType: "qwen3_5", Name: "Qwen3.5 (gated DeltaNet hybrid)", QKNorm: true, Hybrid: true,
		ZeroCentredNorm: true, OutputGate: true, Nested: true, Example: "Qwen/Qwen3.5-4B", Partial: hybridPartial, ToolCalls: "qwen3_coder"},
	"qwen3_5_moe": {ModelType: "qwen3_5_moe", Name: "Qwen3.5-MoE / Qwen3.6 (gated DeltaNet hybrid, MoE)", QKNorm: true, MoE: true,
		Hybrid: true, ZeroCentredNorm: true, OutputGate: true, Nested: true, Example: "Qwen/Qwen3.6-35B-A3B", Partial: hybridPartial, ToolCalls: "qwen3_coder"},
	"glm4_moe": {ModelType: "glm4_moe", Name: "GLM-4.5 / INTELLECT-3 (MoE)", MoE: true, SigmoidRouter: true,
		BiasNotO: true, PartialRotary: true, DefaultPartialRotary: 0.5, Example: "PrimeIntellect/INTELLECT-3", Partial: glmPartial, ToolCalls: "glm45"},
	"nemotron_h": {ModelType: "nemotron_h", Name: "Nemotron-3 (Mamba-2 / attention / MoE hybrid)", MoE: true, SigmoidRouter: true,
		Nemotron: true, Example: "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", Partial: nemotronPartial, ToolCalls: "qwen3_coder"},
	"gpt_oss": {ModelType: "gpt_oss", Name: "gpt-oss (MoE, MXFP4 experts)", MoE: true, GptOssExperts: true,
		Example: "openai/gpt-oss-20b", Partial: gptOssPartial, ToolCalls: "openai"},
}

// gptOssPartial is how far gpt-oss support has come.
const gptOssPartial = "forward, decode and LoRA training checked on the CPU path and emu (tiny models; MXFP4 experts kept MXFP4 on cuda/emu, dequantized to bf16 at load on the CPU); not yet on a GPU or a real checkpoint"

// nemotronPartial is how far Nemotron-3 support has come.
const nemotronPartial = "config and blocks on the CPU path and emu (tiny models); not yet on a GPU or a real checkpoint"

// glmPartial is how far GLM-4.5 support has come.
const glmPartial = "forward, decode graph and LoRA training checked on the CPU path and emu (tiny models); not yet on a GPU or a real checkpoint"

// hybridPartial is how far Qwen3.5/3.6 support has come.
const hybridPartial = "forward, sampling and LoRA training on the CPU path; the CUDA decode graph and prompt sharing in training still to come"

// Archs lists the supported architectures, sorted by model_type.
func Archs() []Arch {
	out := make([]Arch, 0, len(archs))
	for _, a := range archs {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ModelType < out[j].ModelType })
	return out
}

func supportedTypes() string {
	var names []string
	for _, a := range Archs() {
		names = append(names, a.ModelType)
	}
	return strings.Join(names, ", ")
}

// RopeScaling is config.json's rope_scaling; "llama3" and "yarn" (and no
// scaling) are supported.
type RopeScaling struct {
	Type                          string  `json:"rope_type"`
	LegacyType                    string  `json:"type"`
	Factor                        float64 `json:"factor"`
	LowFreqFactor                 float64 `json:"low_freq_factor"`
	HighFreqFactor                float64 `json:"high_freq_factor"`
	OriginalMaxPositionEmbeddings int     `json:"original_max_position_embeddings"`
	// YaRN's (rope.go): the correction range's rotations (0: 32 and 1,
	// transformers' defaults), whether its ends are rounded outward
	// (nil: true), and the cos/sin scale (nil: 0.1·ln(factor) + 1, or
	// the ratio of mscale's and mscale_all_dim's when both are set).
	BetaFast        float64  `json:"beta_fast"`
	BetaSlow        float64  `json:"beta_slow"`
	Truncate        *bool    `json:"truncate"`
	AttentionFactor *float64 `json:"attention_factor"`
	MScale          float64  `json:"mscale"`
	MScaleAllDim    float64  `json:"mscale_all_dim"`
}

// Config is the subset of a Hugging Face config.json that defines the
// computation. Defaults follow transformers' config classes.
type Config struct {
	ModelType         string       `json:"model_type"`
	HiddenSize        int          `json:"hidden_size"`
	IntermediateSize  int          `json:"intermediate_size"`
	NumLayers         int          `json:"num_hidden_layers"`
	NumHeads          int          `json:"num_attention_heads"`
	NumKVHeads        int          `json:"num_key_value_heads"`
	HeadDim           int          `json:"head_dim"`
	VocabSize         int          `json:"vocab_size"`
	RMSNormEps        float64      `json:"rms_norm_eps"`
	RopeTheta         float64      `json:"rope_theta"`
	RopeScaling       *RopeScaling `json:"rope_scaling"`
	MaxPositions      int          `json:"max_position_embeddings"`
	TieWordEmbeddings bool         `json:"tie_word_embeddings"`
	AttentionBias     bool         `json:"attention_bias"`
	HiddenAct         string       `json:"hidden_act"`
	TorchDType        string       `json:"torch_dtype"`
	// EOSTokenIDs holds eos_token_id, which HF writes as a number or a list.
	EOSTokenIDs []int `json:"-"`
	BOSTokenID  *int  `json:"bos_token_id"`
	MoEConfig
	HybridConfig
	GLMMoEConfig
	AttentionVariantConfig
	GptOssConfig
	NemotronConfig
}

// Arch returns the architecture of a validated config.
func (c *Config) Arch() Arch { return archs[c.ModelType] }

// ParamCount is the number of parameters the config describes, counting a
// tied head once.
func (c *Config) ParamCount() int64 {
	h := int64(c.HiddenSize)
	n := int64(c.VocabSize)*h + h
	for _, d := range c.decoderLayers() {
		n += d.mixer.params(c) + d.channel.params(c)
		// A norm before each block (one when the layer has one block).
		for _, has := range []bool{d.hasMixer(), d.hasChannel()} {
			if has {
				n += h
			}
		}
	}
	if !c.TieWordEmbeddings {
		n += int64(c.VocabSize) * h
	}
	return n
}

// LoadConfig reads and validates dir/config.json.
func LoadConfig(dir string) (*Config, error) {
	path := filepath.Join(dir, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: not found; a model directory needs config.json next to its *.safetensors files", path)
		}
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return c, nil
}

// configJSONError is a decoding error on one line: encoding/json names the
// anonymous struct it decodes into, a Go type dump no user can act on.
func configJSONError(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(data[:se.Offset], []byte("\n"))
		return fmt.Errorf("invalid JSON at line %d: %v", line, se)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return fmt.Errorf("invalid JSON: the file must be one JSON object ({\"model_type\": ..., \"hidden_size\": ...}), got a JSON %s", te.Value)
		}
		want := "a " + te.Type.Kind().String()
		switch te.Type.Kind() {
		case reflect.Int, reflect.Int64, reflect.Float64:
			want = "a number"
		case reflect.Struct, reflect.Pointer, reflect.Map:
			want = "an object"
		case reflect.Slice:
			want = "a list"
		}
		// Field is the Go path ("Config.hidden_size"); the JSON key is
		// what a user sees in the file.
		key := strings.TrimPrefix(strings.TrimPrefix(te.Field, "Config."), "MoEConfig.")
		return fmt.Errorf("invalid JSON: %q must be %s, got a JSON %s", key, want, te.Value)
	}
	return fmt.Errorf("invalid JSON: %v", err)
}

// ParseConfig parses and validates the contents of a config.json. For an
// architecture whose text model's keys live under text_config (Qwen3.5's
// Qwen3_5ForConditionalGeneration) those keys are the config, with the
// top level's model_type and, when set there, tie_word_embeddings (the
// key transformers ties the head of the whole model by).
func ParseConfig(data []byte) (*Config, error) {
	var top struct {
		ModelType     string          `json:"model_type"`
		Architectures []string        `json:"architectures"`
		TextConfig    json.RawMessage `json:"text_config"`
		Tie           *bool           `json:"tie_word_embeddings"`
		DType         string          `json:"torch_dtype"`
		DType5        string          `json:"dtype"`
	}
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, configJSONError(data, err)
	}
	if err := checkArchitectures(top.Architectures); err != nil {
		return nil, err
	}
	arch, ok := archs[top.ModelType]
	if !ok || !arch.Nested || len(top.TextConfig) == 0 || string(top.TextConfig) == "null" {
		return parseConfigBody(data, "", arch.Nested)
	}
	c, err := parseConfigBody(top.TextConfig, top.ModelType, true)
	if err != nil {
		return nil, fmt.Errorf("text_config: %v", err)
	}
	if top.Tie != nil {
		c.TieWordEmbeddings = *top.Tie
	}
	if c.TorchDType == "" {
		c.TorchDType = cmp.Or(top.DType, top.DType5)
	}
	return c, nil
}

// parseConfigBody parses one level of config keys; modelType, when not
// "", replaces the level's own (text_config's "qwen3_5_text").
func parseConfigBody(data []byte, modelType string, nested bool) (*Config, error) {
	var raw struct {
		Config
		EOS            json.RawMessage `json:"eos_token_id"`
		UseSliding     bool            `json:"use_sliding_window"`
		MLPBias        bool            `json:"mlp_bias"`
		RopeParameters *struct {
			RopeTheta float64 `json:"rope_theta"`
			// Qwen3.5 keeps its partial rotary factor here; its mRoPE
			// sections reduce to plain RoPE for text, where the three
			// position ids are equal.
			PartialRotaryFactor *float64 `json:"partial_rotary_factor"`
			RopeScaling
		} `json:"rope_parameters"`
		DType5 string `json:"dtype"`
		// Set explicitly, these say what the model's layers must do;
		// an architecture that cannot must refuse them.
		AttnOutputGate *bool    `json:"attn_output_gate"`
		PartialRotary  *float64 `json:"partial_rotary_factor"`
	}
	// Defaults as in transformers' Qwen3Config / Qwen2Config / LlamaConfig
	// (and Qwen3_5TextConfig's for the hybrid keys).
	raw.RopeTheta = 10000
	raw.RMSNormEps = 1e-6
	raw.HiddenAct = "silu"
	raw.MoEConfig = defaultMoE
	raw.HybridConfig = defaultHybrid
	raw.GLMMoEConfig = defaultGLM
	raw.NemotronConfig = defaultNemotron
	if keys := gptOssKeys(data); keys != nil {
		raw.gptOssDefaults(keys)
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, configJSONError(data, err)
	}
	c := raw.Config
	if modelType != "" {
		c.ModelType = modelType
	}
	c.TorchDType = cmp.Or(c.TorchDType, raw.DType5)
	if c.ModelType == "" {
		return nil, fmt.Errorf("no \"model_type\"; supported model types: %s", supportedTypes())
	}
	arch, ok := archs[c.ModelType]
	if !ok {
		if err := pendingModelType(c.ModelType); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("model_type %q is not supported; supported model types: %s", c.ModelType, supportedTypes())
	}
	if arch.Nemotron {
		if err := c.nemotronDefaults(data); err != nil {
			return nil, err
		}
	}
	if raw.RopeParameters != nil {
		if raw.RopeParameters.RopeTheta > 0 {
			c.RopeTheta = raw.RopeParameters.RopeTheta
		}
		if f := raw.RopeParameters.PartialRotaryFactor; f != nil && raw.PartialRotary == nil {
			// transformers 5 moved partial_rotary_factor here.
			raw.PartialRotary = f
		}
		if t := raw.RopeParameters.RopeScaling.Type; t != "" && t != "default" && c.RopeScaling == nil {
			rs := raw.RopeParameters.RopeScaling
			c.RopeScaling = &rs
		}
	}
	if len(raw.EOS) > 0 && string(raw.EOS) != "null" {
		var one int
		if json.Unmarshal(raw.EOS, &one) == nil {
			c.EOSTokenIDs = []int{one}
		} else if err := json.Unmarshal(raw.EOS, &c.EOSTokenIDs); err != nil {
			return nil, fmt.Errorf("eos_token_id: want a number or a list of numbers, got %s", raw.EOS)
		}
	}
	for _, id := range c.EOSTokenIDs {
		// An id past the vocabulary is never sampled: generation would run
		// to the length limit on every rollout without a word.
		if id < 0 || (c.VocabSize > 0 && id >= c.VocabSize) {
			return nil, fmt.Errorf("eos_token_id %d is outside the vocabulary (vocab_size %d); set it to the id of the tokenizer's eos_token", id, c.VocabSize)
		}
	}
	if nested && modelType == "" && arch.Nested && c.HiddenSize == 0 {
		return nil, fmt.Errorf("no \"text_config\": a %s config.json keeps the text model's keys (hidden_size, num_hidden_layers, …) under text_config", arch.Name)
	}
	sizes := []struct {
		key string
		v   int
	}{{"hidden_size", c.HiddenSize}, {"num_hidden_layers", c.NumLayers}, {"num_attention_heads", c.NumHeads}, {"vocab_size", c.VocabSize}}
	// Qwen3.5-MoE has no dense MLP, so no intermediate_size; Nemotron-H's
	// is checked where the pattern has one (validateNemotron).
	if !(arch.MoE && arch.Hybrid) && !arch.Nemotron {
		sizes = append(sizes, struct {
			key string
			v   int
		}{"intermediate_size", c.IntermediateSize})
	}
	for _, f := range sizes {
		if f.v <= 0 {
			return nil, fmt.Errorf("%q must be a positive integer, got %d", f.key, f.v)
		}
	}
	if c.NumKVHeads == 0 {
		c.NumKVHeads = c.NumHeads
	}
	if c.NumKVHeads < 0 || c.NumHeads%c.NumKVHeads != 0 {
		return nil, fmt.Errorf("num_attention_heads %d is not a multiple of num_key_value_heads %d", c.NumHeads, c.NumKVHeads)
	}
	if c.HeadDim == 0 {
		if c.HiddenSize%c.NumHeads != 0 {
			return nil, fmt.Errorf("no head_dim and hidden_size %d is not divisible by num_attention_heads %d", c.HiddenSize, c.NumHeads)
		}
		c.HeadDim = c.HiddenSize / c.NumHeads
	}
	if c.HeadDim <= 0 || c.HeadDim%2 != 0 {
		return nil, fmt.Errorf("head_dim must be a positive even number for rotary embeddings, got %d", c.HeadDim)
	}
	if !(c.RMSNormEps > 0) || math.IsInf(c.RMSNormEps, 0) {
		return nil, fmt.Errorf("rms_norm_eps must be positive, got %v", c.RMSNormEps)
	}
	if !(c.RopeTheta > 0) || math.IsInf(c.RopeTheta, 0) {
		return nil, fmt.Errorf("rope_theta must be positive, got %v", c.RopeTheta)
	}
	if c.HiddenAct != "silu" && !arch.Nemotron { // Nemotron-H's is mlp_hidden_act
		return nil, fmt.Errorf("hidden_act %q is not supported; only \"silu\" (SwiGLU MLP) is", c.HiddenAct)
	}
	if raw.UseSliding {
		return nil, fmt.Errorf("use_sliding_window: true is not supported; set it to false (Qwen2.5 and Qwen3 checkpoints ship with false)")
	}
	if raw.MLPBias {
		return nil, fmt.Errorf("mlp_bias: true is not supported")
	}
	if err := c.validateMoE(arch); err != nil {
		return nil, err
	}
	if err := c.validateGptOss(arch); err != nil {
		return nil, err
	}
	if err := c.validateHybrid(arch); err != nil {
		return nil, err
	}
	if err := c.validateGLM(arch, data); err != nil {
		return nil, err
	}
	if err := c.validateNemotron(arch); err != nil {
		return nil, err
	}
	if err := c.validateAttentionVariants(); err != nil {
		return nil, err
	}
	if err := c.checkAttentionVariant(arch, raw.AttnOutputGate, raw.PartialRotary); err != nil {
		return nil, err
	}
	if arch.QKVBias {
		c.AttentionBias = false // Qwen2 has q/k/v bias regardless; no o_proj bias.
	}
	if rs := c.RopeScaling; rs != nil {
		t := rs.Type
		if t == "" {
			t = rs.LegacyType
		}
		rs.Type = t
		switch t {
		case "default", "":
			c.RopeScaling = nil
		case "llama3":
			if rs.Factor <= 0 || rs.LowFreqFactor <= 0 || rs.HighFreqFactor <= rs.LowFreqFactor || rs.OriginalMaxPositionEmbeddings <= 0 {
				return nil, fmt.Errorf("rope_scaling llama3 needs factor > 0, 0 < low_freq_factor < high_freq_factor and original_max_position_embeddings > 0")
			}
		case "yarn":
			if !(rs.Factor > 0) || rs.OriginalMaxPositionEmbeddings <= 0 || rs.BetaFast < 0 || rs.BetaSlow < 0 {
				return nil, fmt.Errorf("rope_scaling yarn needs factor > 0, original_max_position_embeddings > 0 and beta_fast, beta_slow ≥ 0")
			}
		default:
			return nil, fmt.Errorf("rope_scaling type %q is not supported; supported: llama3, yarn (or none)", t)
		}
	}
	return &c, nil
}
