package model

import (
	"strings"
	"testing"
)

// Qwen3.5's gated attention and partial rotary reach the Config; until an
// architecture's layers pass them to the kernels, a config that sets
// either is refused rather than run as a different model.
func TestConfigGateAndPartialRotary(t *testing.T) {
	c := Config{HeadDim: 256, PartialRotaryFactor: 0.25}
	if got := c.RotaryDim(); got != 64 {
		t.Errorf("RotaryDim of head_dim 256 at 0.25 = %d, want 64", got)
	}
	c.PartialRotaryFactor = 0
	if got := c.RotaryDim(); got != 256 {
		t.Errorf("RotaryDim with no factor = %d, want head_dim 256", got)
	}

	base := `"model_type":"qwen3","hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100`
	full, err := ParseConfig([]byte(`{` + base + `,"partial_rotary_factor":1.0,"attn_output_gate":false}`))
	if err != nil {
		t.Fatal(err)
	}
	if full.RotaryDim() != full.HeadDim {
		t.Errorf("factor 1: RotaryDim %d, head_dim %d", full.RotaryDim(), full.HeadDim)
	}
	for in, want := range map[string]string{
		`{` + base + `,"rope_parameters":{"rope_type":"default","partial_rotary_factor":0.25}}`: "RoPE on 4 of 16 dims",
		`{` + base + `,"partial_rotary_factor":0.5}`:                                            "RoPE on 8 of 16 dims",
		`{` + base + `,"partial_rotary_factor":1.5}`:                                            "want 0 < factor ≤ 1",
		`{` + base + `,"partial_rotary_factor":0.1}`:                                            "positive even number of dims",
		`{` + base + `,"attn_output_gate":true}`:                                                "attn_output_gate: true",
	} {
		if _, err := ParseConfig([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n got %v\nwant error containing %q", in, err, want)
		}
	}

	// The gate doubles q_proj (and its bias): hidden·q more per layer.
	gated := *full
	gated.AttnOutputGate = true
	q := int64(full.NumHeads * full.HeadDim)
	if d := gated.ParamCount() - full.ParamCount(); d != int64(full.NumLayers)*int64(full.HiddenSize)*q {
		t.Errorf("gate adds %d parameters, want layers·hidden·q = %d", d, int64(full.NumLayers)*int64(full.HiddenSize)*q)
	}
}
