package model

import (
	"strings"
	"testing"
)

// qwen35Config is a Qwen3_5ForConditionalGeneration config.json as
// transformers writes it: the text model's keys under text_config, the
// rotary settings under rope_parameters, a vision config beside.
const qwen35Config = `{
  "architectures": ["Qwen3_5ForConditionalGeneration"],
  "model_type": "qwen3_5",
  "tie_word_embeddings": true,
  "text_config": {
    "model_type": "qwen3_5_text",
    "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
    "vocab_size": 512, "rms_norm_eps": 1e-6, "max_position_embeddings": 512,
    "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 16, "linear_value_head_dim": 24,
    "linear_num_key_heads": 2, "linear_num_value_heads": 4,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000000, "partial_rotary_factor": 0.25,
                        "mrope_section": [11, 11, 10], "mrope_interleaved": true},
    "dtype": "bfloat16", "eos_token_id": 2
  },
  "vision_config": {"depth": 2, "hidden_size": 32}
}`

func TestParseQwen35Nested(t *testing.T) {
	c, err := ParseConfig([]byte(qwen35Config))
	if err != nil {
		t.Fatal(err)
	}
	if c.ModelType != "qwen3_5" || !c.Arch().Hybrid || !c.TieWordEmbeddings || c.TorchDType != "bfloat16" {
		t.Fatalf("model_type %q hybrid %v tied %v dtype %q", c.ModelType, c.Arch().Hybrid, c.TieWordEmbeddings, c.TorchDType)
	}
	want := []TokenMixer{MixGatedDeltaNet, MixGatedDeltaNet, MixGatedDeltaNet, MixAttention}
	for l, k := range want {
		if c.Mixer(l) != k {
			t.Errorf("layer %d: %v, want %v", l, c.Mixer(l), k)
		}
	}
	if c.RopeTheta != 1e7 || c.RotaryDim() != 8 || len(c.RopeInvFreq()) != 4 {
		t.Errorf("rope theta %v rotary dim %d inv freqs %d; want 1e7, 8, 4", c.RopeTheta, c.RotaryDim(), len(c.RopeInvFreq()))
	}
	if c.LinearConvDim() != 2*2*16+4*24 || c.RecurrentStateWidth() != 4*16*24 || c.ConvStateWidth() != 3*c.LinearConvDim() {
		t.Errorf("conv dim %d, state %d, conv state %d", c.LinearConvDim(), c.RecurrentStateWidth(), c.ConvStateWidth())
	}
	if _, q := c.Dims(ProjQ); q != 2*4*32 {
		t.Errorf("q_proj out %d, want %d (query and gate per head)", q, 2*4*32)
	}
	// Parameters by hand: embed (tied) + final norm, per layer two norms
	// and the MLP, three DeltaNet mixers and one gated attention.
	h, v := int64(64), int64(512)
	conv := int64(2*2*16 + 4*24)
	delta := h*conv + h*96 + 2*h*4 + conv*4 + 2*4 + 24 + 96*h
	attn := h*256 + 2*h*64 + 128*h + 2*32
	wantN := v*h + h + 4*(2*h+3*h*128) + 3*delta + attn
	if got := c.ParamCount(); got != wantN {
		t.Errorf("ParamCount %d, want %d", got, wantN)
	}
}

func TestParseQwen35IntervalDefault(t *testing.T) {
	// No layer_types: transformers derives them from
	// full_attention_interval (default 4).
	s := strings.Replace(qwen35Config, `"layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],`, `"full_attention_interval": 2,`, 1)
	c, err := ParseConfig([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	for l, k := range []TokenMixer{MixGatedDeltaNet, MixAttention, MixGatedDeltaNet, MixAttention} {
		if c.Mixer(l) != k {
			t.Errorf("layer %d: %v, want %v", l, c.Mixer(l), k)
		}
	}
}

func TestParseQwen35Errors(t *testing.T) {
	for _, tc := range []struct{ from, to, want string }{
		{`"linear_attention", "full_attention"]`, `"linear_attention", "mamba"]`, `layer_types[3] is "mamba"`},
		{`"linear_attention", "linear_attention", "linear_attention", "full_attention"]`, `"full_attention"]`, "layer_types lists 1 layers but num_hidden_layers is 4"},
		{`"linear_num_value_heads": 4`, `"linear_num_value_heads": 3`, "linear_num_value_heads 3 is not a multiple of linear_num_key_heads 2"},
		{`"linear_conv_kernel_dim": 4`, `"linear_conv_kernel_dim": 0`, "linear_conv_kernel_dim must be in 1..8"},
		{`"partial_rotary_factor": 0.25`, `"partial_rotary_factor": 0.1`, "rotary dims: want a positive even number"},
		{`"text_config": {`, `"text_config": {"hidden_size": "wide", `, `text_config: invalid JSON: "hidden_size" must be a number`},
	} {
		_, err := ParseConfig([]byte(strings.Replace(qwen35Config, tc.from, tc.to, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s → %s: error %v, want it to contain %q", tc.from, tc.to, err, tc.want)
		}
	}
}

func TestBatchRuns(t *testing.T) {
	var b Batch
	b.Add(3, 0, 10, 11, 12) // a fresh prompt
	b.Add(5, 7, 20)         // a decode step continuing slot 5
	b.Add(1, 2, 30, 31)     // a later turn of slot 1
	runs, err := b.runs(true)
	if err != nil {
		t.Fatal(err)
	}
	want := []int32{0, 3, -1, 3, 3, 1, 5, 5, 4, 2, 1, 1}
	if len(runs) != len(want) {
		t.Fatalf("runs %v, want %v", runs, want)
	}
	for i := range want {
		if runs[i] != want[i] {
			t.Fatalf("runs %v, want %v", runs, want)
		}
	}
	b.Add(3, 3, 13) // slot 3 again after another slot's tokens
	if _, err := b.runs(true); err == nil || !strings.Contains(err.Error(), "slot 3's tokens are not one run") {
		t.Errorf("split slot: error %v", err)
	}
}

// TestAttentionVariantRefused: a config that asks for gated attention or
// partial rotary of an architecture whose layers do neither is refused,
// not run as a different model; and Qwen3.5 cannot be ungated.
func TestAttentionVariantRefused(t *testing.T) {
	base := `"model_type":"qwen3","hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100`
	if c, err := ParseConfig([]byte(`{` + base + `,"partial_rotary_factor":1.0,"attn_output_gate":false}`)); err != nil || c.RotaryDim() != c.HeadDim {
		t.Fatalf("factor 1, no gate: %v", err)
	}
	for in, want := range map[string]string{
		`{` + base + `,"rope_parameters":{"rope_type":"default","partial_rotary_factor":0.25}}`:                   "RoPE on 4 of 16 dims",
		`{` + base + `,"partial_rotary_factor":0.5}`:                                                              "RoPE on 8 of 16 dims",
		`{` + base + `,"partial_rotary_factor":1.5}`:                                                              "must be in (0, 1]",
		`{` + base + `,"attn_output_gate":true}`:                                                                  `attn_output_gate: true is not supported for model_type "qwen3"`,
		strings.Replace(qwen35Config, `"dtype": "bfloat16"`, `"attn_output_gate": false, "dtype": "bfloat16"`, 1): "whose attention layers are always gated",
	} {
		if _, err := ParseConfig([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n got %v\nwant error containing %q", in, err, want)
		}
	}
}
