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

// TestSaveLoadRoundTrip: every value comes back bit for bit, with the same
// names, ranks, scales and config; PEFT's config keys are all written.
func TestSaveLoadRoundTrip(t *testing.T) {
	m := loadModel(t, "qwen3-tiny")
	a, _ := New(m, Config{Rank: 3, Alpha: 5, TargetModules: []string{"k_proj", "down_proj"}, UseRSLoRA: true}, 9)
	for _, p := range a.Params() { // make B non-zero too
		v := download(m.Backend, p.Value)
		for i := range v {
			v[i] += float32(i%7) * 0.01
		}
		m.Backend.Upload(p.Value, v)
	}
	dir := filepath.Join(t.TempDir(), "adapter")
	if err := Save(dir, a, "Qwen/Qwen3-0.6B"); err != nil {
		t.Fatal(err)
	}
	b, err := Load(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	sameParams(t, m.Backend, a, b)
	if la, lb := a.LoRA(1, model.ProjDown), b.LoRA(1, model.ProjDown); la.Scale != lb.Scale || la.Rank != lb.Rank {
		t.Errorf("scale/rank %v/%d saved, %v/%d loaded", la.Scale, la.Rank, lb.Scale, lb.Rank)
	}
	if got := strings.Join(b.Config.TargetModules, ","); got != "k_proj,down_proj" || !b.Config.UseRSLoRA || b.Config.Rank != 3 || b.Config.Alpha != 5 {
		t.Errorf("loaded config %+v", b.Config)
	}
	var cfg map[string]any
	raw, _ := os.ReadFile(filepath.Join(dir, ConfigFileName))
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": 3.0, "lora_alpha": 5.0, "lora_dropout": 0.0,
		"base_model_name_or_path": "Qwen/Qwen3-0.6B", "bias": "none", "fan_in_fan_out": false, "inference_mode": true,
		"init_lora_weights": true, "use_rslora": true, "use_dora": false, "modules_to_save": nil, "layers_to_transform": nil,
		"layers_pattern": nil, "revision": nil, "auto_mapping": nil}
	for k, v := range want {
		if got, ok := cfg[k]; !ok || got != v {
			t.Errorf("adapter_config.json %s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	for _, k := range []string{"rank_pattern", "alpha_pattern"} {
		if m, ok := cfg[k].(map[string]any); !ok || len(m) != 0 {
			t.Errorf("%s = %v, want {}", k, cfg[k])
		}
	}
	f, err := safetensors.Open(filepath.Join(dir, WeightsFileName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Metadata()["format"] != "pt" {
		t.Errorf("metadata %v, want format pt", f.Metadata())
	}
	if tt, ok := f.Tensor("base_model.model.model.layers.0.mlp.down_proj.lora_A.weight"); !ok || tt.DType != safetensors.F32 || tt.Shape[0] != 3 || tt.Shape[1] != 128 {
		t.Errorf("down_proj lora_A: %v %v %v", ok, tt.DType, tt.Shape)
	}
}

// TestSavePatternsRoundTrip: an adapter with per-module ranks and alphas
// (theirs) saves them as rank_pattern / alpha_pattern and loads back
// identical; the logits do not change.
func TestSavePatternsRoundTrip(t *testing.T) {
	m := loadModel(t, "qwen2-tiny")
	a, err := Load(filepath.Join(root, "testdata", "lora", "theirs"), m)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "re")
	if err := Save(dir, a, "x"); err != nil {
		t.Fatal(err)
	}
	b, err := Load(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	tokens := []int32{3, 9, 27, 81, 243}
	if d := maxAbsDiff(logits(t, m.WithAdapter(a), tokens), logits(t, m.WithAdapter(b), tokens)); d != 0 {
		t.Errorf("re-saved adapter differs by %g", d)
	}
	for l := range 2 {
		for p := range model.NumProj {
			r1, a1, ok1 := a.Module(l, p)
			r2, a2, ok2 := b.Module(l, p)
			if r1 != r2 || a1 != a2 || ok1 != ok2 {
				t.Errorf("layer %d %s: %d/%v/%v vs %d/%v/%v", l, p, r1, a1, ok1, r2, a2, ok2)
			}
		}
	}
}

// TestSaveRefusesForeignDir: Save replaces an adapter directory, never a
// directory of something else.
func TestSaveRefusesForeignDir(t *testing.T) {
	m := loadModel(t, "qwen3-tiny")
	a, _ := New(m, Config{Rank: 1, Alpha: 1, TargetModules: []string{"q_proj"}}, 1)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("keep me"), 0o644)
	err := Save(dir, a, "x")
	if err == nil || !strings.Contains(err.Error(), "refusing to replace") {
		t.Fatalf("got %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(b) != "keep me" {
		t.Fatal("Save touched a foreign directory")
	}
	// Replacing a previous adapter works and leaves no temporary files.
	ad := filepath.Join(t.TempDir(), "ad")
	for range 2 {
		if err := Save(ad, a, "x"); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(ad))
	if len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
}

// TestLoadKeyVariants: keys without the base_model.model. prefix or with
// PEFT's in-memory ".default" adapter name, F16 and BF16 tensors, and
// target_modules written as a string load to the same adapter.
func TestLoadKeyVariants(t *testing.T) {
	m := loadModel(t, "qwen3-tiny")
	a, _ := New(m, Config{Rank: 2, Alpha: 4, TargetModules: []string{"q_proj", "up_proj"}}, 3)
	for _, c := range []struct {
		name   string
		rename func(string) string
		dtype  safetensors.DType
		cfg    map[string]any
	}{
		{"no prefix", func(s string) string { return strings.TrimPrefix(s, "base_model.model.") }, safetensors.F32, nil},
		{"default infix", func(s string) string { return strings.Replace(s, ".weight", ".default.weight", 1) }, safetensors.F32, nil},
		{"f16", nil, safetensors.F16, nil},
		{"bf16", nil, safetensors.BF16, nil},
		{"regex string", nil, safetensors.F32, map[string]any{"target_modules": `model\.layers\.\d+\.(self_attn\.q_proj|mlp\.up_proj)`}},
		{"all-linear", nil, safetensors.F32, map[string]any{"target_modules": "all-linear", "exclude_modules": []string{"k_proj", "v_proj", "o_proj", "gate_proj", "down_proj"}}},
		{"null targets", nil, safetensors.F32, map[string]any{"target_modules": nil}},
		{"suffix names", nil, safetensors.F32, map[string]any{"target_modules": []string{"self_attn.q_proj", "mlp.up_proj"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := writeVariant(t, a, c.rename, c.dtype, c.cfg)
			b, err := Load(dir, m)
			if err != nil {
				t.Fatal(err)
			}
			pa, pb := a.Params(), b.Params()
			if len(pa) != len(pb) {
				t.Fatalf("%d vs %d params", len(pa), len(pb))
			}
			for i := range pa {
				va, vb := download(m.Backend, pa[i].Value), download(m.Backend, pb[i].Value)
				tol := 0.0
				if c.dtype == safetensors.BF16 {
					tol = 1.0 / 256 * 0.5 // bf16 keeps 8 significant bits; |A| < 1/8
				} else if c.dtype == safetensors.F16 {
					tol = 1e-4
				}
				if d := maxAbsDiff(va, vb); d > tol {
					t.Fatalf("%s differs by %g", pa[i].Name, d)
				}
			}
		})
	}
}

// writeVariant saves a and rewrites its files: tensor names through
// rename, values in dtype, config keys overridden by cfg.
func writeVariant(t *testing.T, a *Adapter, rename func(string) string, dtype safetensors.DType, cfg map[string]any) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "v")
	if err := Save(dir, a, "x"); err != nil {
		t.Fatal(err)
	}
	var tensors []safetensors.Tensor
	for _, p := range a.Params() {
		name := p.Name
		if rename != nil {
			name = rename(name)
		}
		v := download(a.be, p.Value)
		var tt safetensors.Tensor
		var err error
		switch dtype {
		case safetensors.F16:
			tt, err = safetensors.NewF16(name, p.Shape[:], v)
		case safetensors.BF16:
			tt, err = safetensors.NewBF16(name, p.Shape[:], v)
		default:
			tt, err = safetensors.NewF32(name, p.Shape[:], v)
		}
		if err != nil {
			t.Fatal(err)
		}
		tensors = append(tensors, tt)
	}
	if err := safetensors.Write(filepath.Join(dir, WeightsFileName), tensors, nil); err != nil {
		t.Fatal(err)
	}
	editConfig(t, dir, cfg)
	return dir
}

func editConfig(t *testing.T, dir string, cfg map[string]any) {
	t.Helper()
	if cfg == nil {
		return
	}
	path := filepath.Join(dir, ConfigFileName)
	raw, _ := os.ReadFile(path)
	var c map[string]any
	json.Unmarshal(raw, &c)
	for k, v := range cfg {
		c[k] = v
	}
	out, _ := json.Marshal(c)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}
