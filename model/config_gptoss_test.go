package model

import (
	"math"
	"strings"
	"testing"
)

// TestGptOssConfig: a config.json with gpt-oss's keys maps onto Config as
// transformers' GptOssConfig reads it: unset keys take its defaults (the
// 120b's sizes, YaRN, alternating sliding and full layers from sliding
// first), num_local_experts and intermediate_size become the experts',
// every layer sparse; and the shapes' parameter counts are the published
// 20.9B and 116.8B, less the attention sinks (64 per layer) which the
// attention block will own, and 3.6B and 5.1B active (which openai counts
// without the embedding: a lookup, no FLOPs).
func TestGptOssConfig(t *testing.T) {
	c, err := ParseConfig([]byte(`{"model_type": "gpt_oss", "num_hidden_layers": 4, "num_local_experts": 32, "sliding_window": 16}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.HiddenSize != 2880 || c.NumHeads != 64 || c.NumKVHeads != 8 || c.HeadDim != 64 || c.VocabSize != 201088 ||
		c.RMSNormEps != 1e-5 || c.RopeTheta != 150000 || !c.AttentionBias || c.TieWordEmbeddings || c.NumExpertsPerTok != 4 ||
		c.NumExperts != 32 || c.MoEIntermediateSize != 2880 || c.SwigluLimit != 7 || c.SwigluAlpha != 1.702 || c.SparseLayers() != 4 {
		t.Errorf("defaults: %+v", c)
	}
	if rs := c.RopeScaling; rs == nil || rs.Type != "yarn" || rs.Factor != 32 || rs.Truncate == nil || *rs.Truncate || rs.OriginalMaxPositionEmbeddings != 4096 {
		t.Errorf("rope_scaling: %+v", c.RopeScaling)
	}
	for l, want := range []int{16, 0, 16, 0} {
		if got := c.SlidingWindow(l); got != want {
			t.Errorf("layer %d: window %d, want %d", l, got, want)
		}
	}
	for in, want := range map[string]string{
		`{"model_type": "gpt_oss", "num_hidden_layers": 2, "layer_types": ["sliding_attention"]}`:                    "layer_types lists 1 layers",
		`{"model_type": "gpt_oss", "num_hidden_layers": 1, "layer_types": ["linear_attention"]}`:                     "\"linear_attention\"; want",
		`{"model_type": "gpt_oss", "num_hidden_layers": 1, "sliding_window": null}`:                                  "sliding_window is 0",
		`{"model_type": "gpt_oss", "quantization_config": {"quant_method": "fp8"}}`:                                  "quant_method \"fp8\"",
		`{"model_type": "gpt_oss", "swiglu_limit": 0}`:                                                               "swiglu_limit 0",
		`{"model_type": "gpt_oss", "rope_scaling": {"rope_type": "yarn", "original_max_position_embeddings": 4096}}`: "rope_scaling yarn needs factor",
	} {
		if _, err := ParseConfig([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
	for name, want := range map[string][2]float64{"gpt-oss-20b": {20.91, 3.61}, "gpt-oss-120b": {116.83, 5.13}} {
		s, _ := Shape(name)
		sinks := int64(s.NumLayers * s.NumHeads)
		embed := int64(s.VocabSize * s.HiddenSize)
		got := [2]float64{float64(s.ParamCount()+sinks) / 1e9, float64(s.ActiveParamCount()+sinks-embed) / 1e9}
		if math.Abs(got[0]-want[0]) > 0.01 || math.Abs(got[1]-want[1]) > 0.01 {
			t.Errorf("%s: %.2fB parameters (%.2fB active), want %.2fB (%.2fB)", name, got[0], got[1], want[0], want[1])
		}
		if s.SlidingWindow(0) != 128 || s.SlidingWindow(1) != 0 {
			t.Errorf("%s: windows %d, %d", name, s.SlidingWindow(0), s.SlidingWindow(1))
		}
	}
}

// TestYarnInvFreq: gpt-oss's YaRN frequencies (head_dim 64, θ 150000,
// factor 32, β 32 and 1 over 4096 positions, truncate false) against the
// rule written out here: the ramp runs from dim 8.09 to 17.40 of the 32
// pairs, and the attention factor is 0.1·ln 32 + 1.
func TestYarnInvFreq(t *testing.T) {
	s, _ := Shape("gpt-oss-20b")
	inv := s.RopeInvFreq()
	low := 64 * math.Log(4096/(32*2*math.Pi)) / (2 * math.Log(150000))
	high := 64 * math.Log(4096/(1*2*math.Pi)) / (2 * math.Log(150000))
	if math.Abs(low-8.0937) > 1e-3 || math.Abs(high-17.3980) > 1e-3 {
		t.Fatalf("correction range %g … %g", low, high)
	}
	for i, got := range inv {
		base := math.Pow(150000, -float64(2*i)/64)
		ramp := math.Min(math.Max((float64(i)-low)/(high-low), 0), 1)
		want := base/32*ramp + base*(1-ramp)
		if math.Abs(float64(got)-want) > 1e-7*want {
			t.Errorf("pair %d: %g, want %g", i, got, want)
		}
	}
	if f := s.RopeAttentionFactor(); math.Abs(f-(0.1*math.Log(32)+1)) > 1e-15 {
		t.Errorf("attention factor %g", f)
	}
	// truncate (the default) rounds the range outward: 8 … 18.
	tr := true
	s.RopeScaling.Truncate = &tr
	inv = s.RopeInvFreq()
	for _, i := range []int{8, 18} {
		base := math.Pow(150000, -float64(2*i)/64)
		want := base / 32 * math.Min(math.Max((float64(i)-8)/10, 0), 1)
		want += base * (1 - math.Min(math.Max((float64(i)-8)/10, 0), 1))
		if math.Abs(float64(inv[i])-want) > 1e-7*want {
			t.Errorf("truncated, pair %d: %g, want %g", i, inv[i], want)
		}
	}
}
