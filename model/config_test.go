package model

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseConfigDefaultsAndVariants(t *testing.T) {
	c, err := ParseConfig([]byte(`{"model_type":"qwen3","hidden_size":64,"intermediate_size":128,
		"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100,"eos_token_id":[5,7]}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.NumKVHeads != 4 || c.HeadDim != 16 || c.RopeTheta != 10000 || c.RMSNormEps != 1e-6 {
		t.Errorf("defaults: kv=%d head_dim=%d theta=%v eps=%v", c.NumKVHeads, c.HeadDim, c.RopeTheta, c.RMSNormEps)
	}
	if len(c.EOSTokenIDs) != 2 || c.EOSTokenIDs[1] != 7 {
		t.Errorf("eos list: %v", c.EOSTokenIDs)
	}
	c, err = ParseConfig([]byte(`{"model_type":"qwen2","hidden_size":64,"intermediate_size":128,
		"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"vocab_size":100,"eos_token_id":3,
		"rope_parameters":{"rope_theta":5000,"rope_type":"default"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.EOSTokenIDs[0] != 3 || c.RopeTheta != 5000 || c.RopeScaling != nil {
		t.Errorf("qwen2: eos=%v theta=%v scaling=%v", c.EOSTokenIDs, c.RopeTheta, c.RopeScaling)
	}
}

func TestParseConfigErrors(t *testing.T) {
	base := `"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100`
	cases := map[string]string{
		`{"model_type":"gpt2",` + base + `}`:                                         "supported model types: glm4_moe, gpt_oss, llama, nemotron_h, qwen2, qwen3",
		`{` + base + `}`:                                                             "no \"model_type\"",
		`{"model_type":"llama","hidden_size":0}`:                                     "\"hidden_size\" must be a positive integer",
		`{"model_type":"llama",` + base + `,"num_key_value_heads":3}`:                "not a multiple of num_key_value_heads 3",
		`{"model_type":"llama",` + base + `,"hidden_act":"gelu"}`:                    "hidden_act \"gelu\"",
		`{"model_type":"llama",` + base + `,"rope_scaling":{"rope_type":"yarn"}}`:    "rope_scaling yarn needs factor",
		`{"model_type":"llama",` + base + `,"rope_scaling":{"rope_type":"dynamic"}}`: "rope_scaling type \"dynamic\"",
		`{"model_type":"llama",` + base + `,"rope_scaling":{"rope_type":"llama3"}}`:  "rope_scaling llama3 needs",
		`{"model_type":"qwen2",` + base + `,"use_sliding_window":true}`:              "use_sliding_window",
		`{"model_type":"llama",` + base + `,"eos_token_id":"x"}`:                     "eos_token_id",
		`{"model_type":"llama",`:                                                     "invalid JSON",
		`{"model_type":"llama",` + base + `,"head_dim":7}`:                           "head_dim must be a positive even number",
		`{"model_type":"llama",` + base + `,"rms_norm_eps":-1}`:                      "rms_norm_eps must be positive",
	}
	for in, want := range cases {
		_, err := ParseConfig([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n got %v\nwant error containing %q", in, err, want)
		}
	}
}

func TestLoadConfigNamesFile(t *testing.T) {
	dir := t.TempDir()
	_, err := LoadConfig(dir)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "config.json")) {
		t.Fatalf("missing config: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type":"bert"}`), 0o644)
	_, err = LoadConfig(dir)
	if err == nil || !strings.Contains(err.Error(), "config.json: model_type \"bert\" is not supported") {
		t.Fatalf("bad type: %v", err)
	}
}

// TestLlama3InvFreq checks the scaled frequencies against values worked out
// by hand from Llama 3.1's rule for the three bands.
func TestLlama3InvFreq(t *testing.T) {
	c := &Config{HeadDim: 8, RopeTheta: 10000, RopeScaling: &RopeScaling{Type: "llama3", Factor: 8,
		LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 64}}
	got := c.RopeInvFreq()
	// Unscaled 1/10000^(2i/8): 1, 0.1, 0.01, 0.001 → wavelengths 2π·{1,10,100,1000}.
	// High-frequency band (wavelen < 64/4 = 16): kept. Low band (> 64): ÷8.
	// 2π·10 ≈ 62.83 is in the middle band: smooth = (64/62.83 − 1)/3.
	smooth := (64/(2*math.Pi*10) - 1) / 3
	want := []float64{1, (1-smooth)*0.1/8 + smooth*0.1, 0.01 / 8, 0.001 / 8}
	for i := range want {
		if math.Abs(float64(got[i])-want[i]) > 1e-7*want[i] {
			t.Errorf("inv_freq[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestParamCountQwen3_06B(t *testing.T) {
	c, _ := Shape("qwen3-0.6b")
	// Qwen3-0.6B's model card: 0.6B total, 0.44B non-embedding.
	n := c.ParamCount()
	nonEmb := n - int64(c.VocabSize*c.HiddenSize)
	if n < 590e6 || n > 610e6 || nonEmb < 430e6 || nonEmb > 450e6 {
		t.Errorf("params %d, non-embedding %d", n, nonEmb)
	}
}
