package lora

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/model"
)

// TestGLMAllLinear: "all-linear" on GLM-4.5 adapts what PEFT adapts on
// Glm4MoeForCausalLM — attention, the dense first layer's MLP and the
// shared experts (nn.Linears), not the routed experts (fused Parameters)
// nor the router (no Linear) — under PEFT's module names, and the
// adapter saves and loads back bit for bit.
func TestGLMAllLinear(t *testing.T) {
	m := loadModel(t, "glm4_moe-tiny")
	cfg := Config{Rank: 4, Alpha: 8, TargetModules: []string{AllLinear}}
	a, err := New(m, cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var elems int64
	for _, p := range a.Params() {
		names = append(names, p.Name)
		elems += int64(p.Value.Len())
	}
	want := func(name string) bool {
		return slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, name) })
	}
	for _, n := range []string{"model.layers.0.mlp.gate_proj.lora_A", "model.layers.0.self_attn.q_proj.lora_A",
		"model.layers.1.mlp.shared_experts.down_proj.lora_B", "model.layers.2.self_attn.o_proj.lora_B"} {
		if !want(n) {
			t.Errorf("no param %s in %v", n, names)
		}
	}
	for _, n := range []string{"mlp.experts", "mlp.gate.", "model.layers.1.mlp.gate_proj", "shared_expert."} {
		if want(n) {
			t.Errorf("a param named like %s in %v", n, names)
		}
	}
	if n, err := cfg.ParamCount(m.Config); err != nil || n != elems {
		t.Errorf("ParamCount %d (%v), want the %d elements New allocated", n, err, elems)
	}
	roundTrip(t, m, a, nil)
}

// TestGLMExpertsSaveLoad: with the MLP targets (AllModules) the routed
// experts are adapted too and saved as PEFT's target_parameters on the
// fused mlp.experts.gate_up_proj / down_proj, as for Qwen3.5-MoE; the
// file loads back bit for bit.
func TestGLMExpertsSaveLoad(t *testing.T) {
	m := loadModel(t, "glm4_moe-tiny")
	a, err := New(m, Config{Rank: 4, Alpha: 8, TargetModules: AllModules}, 3)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, m, a, []string{"mlp.experts.gate_up_proj", "mlp.experts.down_proj"})
}

// roundTrip saves a (B made non-zero), checks target_parameters, loads it
// back and compares every parameter bit for bit.
func roundTrip(t *testing.T, mm *model.Model, a *Adapter, targetParams []string) {
	t.Helper()
	nonZeroB(t, mm, a, 5)
	dir := filepath.Join(t.TempDir(), "a")
	if err := Save(dir, a, "x"); err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		TargetParameters []string `json:"target_parameters"`
	}
	raw, _ := os.ReadFile(filepath.Join(dir, ConfigFileName))
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.TargetParameters, targetParams) {
		t.Errorf("target_parameters %v, want %v", cfg.TargetParameters, targetParams)
	}
	b, err := Load(dir, mm)
	if err != nil {
		t.Fatal(err)
	}
	sameParams(t, mm.Backend, a, b)
}

// TestGLMPEFTAllLinear: the PEFT-layout all-linear adapter
// glm4_moe_lora_grad.py writes (testdata/lora/glm4_moe-tiny-all-linear)
// loads with every matrix of the file, Save writes its tensors back byte
// for byte, and New with ["all-linear"] builds exactly its modules and
// shapes.
func TestGLMPEFTAllLinear(t *testing.T) {
	m := loadModel(t, "glm4_moe-tiny")
	dir := filepath.Join(root, "testdata", "lora", "glm4_moe-tiny-all-linear")
	want, _ := readTensors(t, filepath.Join(dir, WeightsFileName))
	a, err := Load(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Params()) != len(want) {
		t.Errorf("loaded %d matrices, the file holds %d", len(a.Params()), len(want))
	}
	out := filepath.Join(t.TempDir(), "a")
	if err := Save(out, a, "x"); err != nil {
		t.Fatal(err)
	}
	got, _ := readTensors(t, filepath.Join(out, WeightsFileName))
	if len(got) != len(want) {
		t.Errorf("Save wrote %d tensors, the file has %d", len(got), len(want))
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok || g.dtype != w.dtype || !slices.Equal(g.shape, w.shape) || !bytes.Equal(g.raw, w.raw) {
			t.Errorf("%s: wrote %v %v (present %v), file has %v %v", name, g.dtype, g.shape, ok, w.dtype, w.shape)
		}
	}
	fresh, err := New(m, Config{Rank: 4, Alpha: 8, TargetModules: []string{AllLinear}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range fresh.Params() {
		if w, ok := want[p.Name]; !ok || !slices.Equal(w.shape, p.Shape[:]) {
			t.Errorf("all-linear adapts %s %v, which PEFT's adapter has not", p.Name, p.Shape)
		}
	}
	if len(fresh.Params()) != len(want) {
		t.Errorf("all-linear builds %d matrices, PEFT's adapter has %d", len(fresh.Params()), len(want))
	}
}
