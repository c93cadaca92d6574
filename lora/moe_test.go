package lora

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/model/safetensors"
)

var moeTokens = []int32{5, 17, 300, 2, 99, 41, 7, 260, 11, 480, 3, 64}

// TestMoEAdapterKeysAndShapes: on Qwen3-MoE, target gate_proj/up_proj/
// down_proj adapts every expert of the sparse layers under PEFT's keys
// (…mlp.experts.{e}.gate_proj.lora_A.weight) and the dense MLP of the
// mlp_only layer under its usual keys; the model sees the experts'
// adapters stacked.
func TestMoEAdapterKeysAndShapes(t *testing.T) {
	m := loadModel(t, "qwen3-moe-tiny-dense") // layers 0 and 2 sparse (4 experts), 1 dense
	a, err := New(m, Config{Rank: 4, Alpha: 8, TargetModules: AllModules}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Free()
	c := m.Config
	names := map[string][2]int{}
	for _, p := range a.Params() {
		names[p.Name] = p.Shape
	}
	// 3 layers × 4 attention projections × 2, + dense layer 1's MLP (3 × 2),
	// + 2 sparse layers × 3 projections × 4 experts × 2.
	if want := 3*4*2 + 3*2 + 2*3*4*2; len(names) != want {
		t.Errorf("%d params, want %d", len(names), want)
	}
	for key, shape := range map[string][2]int{
		"base_model.model.model.layers.0.mlp.experts.3.gate_proj.lora_A.weight": {4, 64},
		"base_model.model.model.layers.2.mlp.experts.0.down_proj.lora_B.weight": {64, 4},
		"base_model.model.model.layers.2.mlp.experts.1.down_proj.lora_A.weight": {4, 32},
		"base_model.model.model.layers.1.mlp.up_proj.lora_B.weight":             {128, 4},
		"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight":        {4, 64},
	} {
		if got, ok := names[key]; !ok || got != shape {
			t.Errorf("%s: shape %v (present %v), want %v", key, got, ok, shape)
		}
	}
	if a.LoRA(0, model.ProjGate) != nil || a.ExpertLoRA(1, model.ProjGate) != nil {
		t.Error("a sparse layer has a dense MLP adapter, or a dense layer an expert one")
	}
	el := a.ExpertLoRA(2, model.ProjDown)
	if el == nil || el.A.Len() != c.NumExperts*4*c.MoEIntermediateSize || el.Rank != 4 || el.Scale != 2 {
		t.Fatalf("layer 2 down_proj experts: %+v", el)
	}
}

// moeAdapter is a full adapter on qwen3-moe-tiny-dense with non-zero B.
func moeAdapter(t *testing.T, m *model.Model, targets []string) *Adapter {
	t.Helper()
	saved := oursConfig
	oursConfig = Config{Rank: 4, Alpha: 8, TargetModules: targets}
	defer func() { oursConfig = saved }()
	return newOursAdapter(t, m)
}

// TestMoESaveLoadMerge: an adapter on every expert and on the routers
// (target "gate") round-trips through PEFT files byte for byte in its
// values, moves the logits, and merging it (in memory, and into a written
// model directory that model.Load reads back) gives the adapted model's
// logits.
func TestMoESaveLoadMerge(t *testing.T) {
	m := loadModel(t, "qwen3-moe-tiny-dense")
	targets := append([]string{model.RouterModule}, AllModules...)
	a := moeAdapter(t, m, targets)
	if a.RouterLoRA(0) == nil || a.RouterLoRA(1) != nil || a.RouterLoRA(2) == nil {
		t.Fatal("routers adapted in the wrong layers: want the sparse layers 0 and 2")
	}
	defer a.Free()
	base := logits(t, m, moeTokens)
	want := logits(t, m.WithAdapter(a), moeTokens)
	if d := maxAbsDiff(base, want); d < 0.05 {
		t.Fatalf("the adapter moves the logits by only %.3g", d)
	}
	dir := filepath.Join(t.TempDir(), "adapter")
	if err := Save(dir, a, "test/qwen3-moe-tiny-dense"); err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		TargetModules []string `json:"target_modules"`
	}
	raw, _ := os.ReadFile(filepath.Join(dir, ConfigFileName))
	if err := json.Unmarshal(raw, &cfg); err != nil || strings.Join(cfg.TargetModules, ",") != strings.Join(targets, ",") {
		t.Errorf("target_modules %v (%v), want %v: PEFT matches gate_proj on every expert and gate on the routers", cfg.TargetModules, err, targets)
	}
	f, err := safetensors.Open(filepath.Join(dir, WeightsFileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"base_model.model.model.layers.0.mlp.experts.2.up_proj.lora_B.weight", "base_model.model.model.layers.2.mlp.gate.lora_A.weight"} {
		if _, ok := f.Tensor(key); !ok {
			t.Errorf("saved file lacks %s", key)
		}
	}
	f.Close()
	b, err := Load(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	if d := maxAbsDiff(logits(t, m.WithAdapter(b), moeTokens), want); d != 0 {
		t.Errorf("loaded adapter's logits differ by %.3g", d)
	}

	out := filepath.Join(t.TempDir(), "merged")
	if err := WriteMerged(out, filepath.Join(root, "testdata", "models", "qwen3-moe-tiny-dense"), a); err != nil {
		t.Fatal(err)
	}
	mm, err := model.Load(out, m.Backend)
	if err != nil {
		t.Fatal(err)
	}
	if d := maxAbsDiff(logits(t, mm, moeTokens), want); d > 1e-4 {
		t.Errorf("WriteMerged model's logits differ from the adapted model's by %.3g > 1e-4", d)
	}
	if err := Merge(m, a); err != nil {
		t.Fatal(err)
	}
	if d := maxAbsDiff(logits(t, m, moeTokens), want); d > 1e-4 {
		t.Errorf("merged model's logits differ from the adapted model's by %.3g > 1e-4", d)
	}
}

// TestMoEAttentionOnly: an attention-only adapter leaves the experts bare.
func TestMoEAttentionOnly(t *testing.T) {
	m := loadModel(t, "qwen3-moe-tiny")
	a := moeAdapter(t, m, []string{"q_proj", "v_proj"})
	defer a.Free()
	for l := range m.Config.NumLayers {
		if a.ExpertLoRA(l, model.ProjGate) != nil {
			t.Fatal("attention-only adapter adapts experts")
		}
	}
	dir := filepath.Join(t.TempDir(), "adapter")
	if err := Save(dir, a, "x"); err != nil {
		t.Fatal(err)
	}
	b, err := Load(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	if d := maxAbsDiff(logits(t, m.WithAdapter(b), moeTokens), logits(t, m.WithAdapter(a), moeTokens)); d != 0 {
		t.Errorf("round trip moved logits by %.3g", d)
	}
}

// TestMoELoadErrors: adapters that do not fit the experts are one clear
// error: a dense MLP key on a sparse layer, an expert beyond num_experts,
// an expert key on a dense model, and a missing expert's pair.
func TestMoELoadErrors(t *testing.T) {
	m := loadModel(t, "qwen3-moe-tiny")
	a := moeAdapter(t, m, AllModules)
	defer a.Free()
	dir := filepath.Join(t.TempDir(), "adapter")
	if err := Save(dir, a, "x"); err != nil {
		t.Fatal(err)
	}
	rewrite := func(t *testing.T, edit func([]safetensors.Tensor) []safetensors.Tensor) string {
		f, err := safetensors.Open(filepath.Join(dir, WeightsFileName))
		if err != nil {
			t.Fatal(err)
		}
		var ts []safetensors.Tensor
		for _, n := range f.Names() {
			x, _ := f.Tensor(n)
			v, _ := x.Float32s()
			nt, _ := safetensors.NewF32(n, x.Shape, v)
			ts = append(ts, nt)
		}
		f.Close()
		out := t.TempDir()
		raw, _ := os.ReadFile(filepath.Join(dir, ConfigFileName))
		os.WriteFile(filepath.Join(out, ConfigFileName), raw, 0o644)
		if err := safetensors.Write(filepath.Join(out, WeightsFileName), edit(ts), nil); err != nil {
			t.Fatal(err)
		}
		return out
	}
	rename := func(from, to string) func([]safetensors.Tensor) []safetensors.Tensor {
		return func(ts []safetensors.Tensor) []safetensors.Tensor {
			for i := range ts {
				if ts[i].Name == from {
					v, _ := ts[i].Float32s()
					ts[i], _ = safetensors.NewF32(to, ts[i].Shape, v)
				}
			}
			return ts
		}
	}
	drop := func(name string) func([]safetensors.Tensor) []safetensors.Tensor {
		return func(ts []safetensors.Tensor) []safetensors.Tensor {
			var out []safetensors.Tensor
			for _, x := range ts {
				if x.Name != name && x.Name != strings.Replace(name, "lora_A", "lora_B", 1) {
					out = append(out, x)
				}
			}
			return out
		}
	}
	e0 := "base_model.model.model.layers.0.mlp.experts.0.gate_proj.lora_A.weight"
	for _, c := range []struct {
		name, want string
		edit       func([]safetensors.Tensor) []safetensors.Tensor
	}{
		{"dense key on a sparse layer", "is a mixture-of-experts layer", rename(e0, "base_model.model.model.layers.0.mlp.gate_proj.lora_A.weight")},
		{"expert out of range", "model has 8 experts", rename(e0, "base_model.model.model.layers.0.mlp.experts.8.gate_proj.lora_A.weight")},
		{"missing expert's pair", "is missing", drop(e0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(rewrite(t, c.edit), m)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	if _, err := Load(dir, loadModel(t, "qwen3-tiny")); err == nil || !strings.Contains(err.Error(), "has no experts") {
		t.Errorf("MoE adapter on a dense model: %v", err)
	}
	if _, err := New(loadModel(t, "qwen3-tiny"), Config{Rank: 2, Alpha: 4, TargetModules: []string{"q_proj", "gate"}}, 1); err == nil || !strings.Contains(err.Error(), "has none") {
		t.Errorf("target gate on a dense model: %v", err)
	}
}
