package lora

import (
	"slices"
	"strings"
	"testing"
)

// TestNemotronAllLinear: "all-linear" on Nemotron-3 adapts what PEFT
// adapts on NemotronHForCausalLM — the Mamba-2 mixers' in_proj/out_proj,
// attention's q/k/v/o_proj, the dense MLP's and the shared experts'
// up/down_proj (nn.Linears), not the routed experts (3-D Parameters) nor
// the router (a bare Parameter) — under the checkpoint's module names
// (backbone.layers.N.mixer.…), and the adapter saves and loads back bit for
// bit.
func TestNemotronAllLinear(t *testing.T) {
	m := loadModel(t, "nemotron_h-tiny")
	cfg := Config{Rank: 4, Alpha: 8, TargetModules: []string{AllLinear}}
	a, err := New(m, cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	names := paramNames(a)
	has := func(name string) bool {
		return slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, name) })
	}
	for _, n := range []string{"backbone.layers.0.mixer.in_proj.lora_A", "backbone.layers.0.mixer.out_proj.lora_B",
		"backbone.layers.1.mixer.q_proj.lora_A", "backbone.layers.1.mixer.o_proj.lora_B",
		"backbone.layers.3.mixer.shared_experts.up_proj.lora_A", "backbone.layers.3.mixer.shared_experts.down_proj.lora_B",
		"backbone.layers.4.mixer.up_proj.lora_A", "backbone.layers.4.mixer.down_proj.lora_B"} {
		if !has(n) {
			t.Errorf("no param %s in %v", n, names)
		}
	}
	for _, n := range []string{"mixer.experts.", "mixer.gate.", "gate_proj", "self_attn", "mlp."} {
		if has(n) {
			t.Errorf("a param named like %s in %v", n, names)
		}
	}
	if len(names) != 2*14 {
		t.Errorf("%d matrices, want 28 (14 modules)", len(names))
	}
	roundTrip(t, m, a, nil)
}

// TestNemotronExpertsSaveLoad: with the MLP targets named (AllModules)
// the routed experts are adapted too, saved one module per expert as the
// checkpoint and vLLM name them (mixer.experts.E.up_proj), and load back
// bit for bit.
func TestNemotronExpertsSaveLoad(t *testing.T) {
	m := loadModel(t, "nemotron_h-tiny")
	a, err := New(m, Config{Rank: 4, Alpha: 8, TargetModules: AllModules}, 3)
	if err != nil {
		t.Fatal(err)
	}
	names := paramNames(a)
	if !slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, "backbone.layers.3.mixer.experts.7.up_proj.lora_A") }) {
		t.Errorf("no per-expert adapter in %v", names)
	}
	roundTrip(t, m, a, nil)
}

// TestNemotronMerge: the merged base model computes what base + an
// all-linear adapter (every Nemotron-H block kind) did, to float32
// rounding.
func TestNemotronMerge(t *testing.T) {
	m := loadModel(t, "nemotron_h-tiny")
	a, err := New(m, Config{Rank: 4, Alpha: 8, TargetModules: []string{AllLinear}}, 5)
	if err != nil {
		t.Fatal(err)
	}
	checkMerge(t, m, a)
}

// TestNemotronLatentAllLinear: on Nemotron-3-Super's latent MoE
// (nemotron_h-latent-tiny) "all-linear" also adapts fc1_latent_proj and
// fc2_latent_proj, nn.Linears of NemotronHMoE, under their checkpoint
// names; the adapter saves and loads back bit for bit, every expert's
// adapter (AllModules) is latent wide and round-trips too, and the merged
// model computes what base + the all-linear adapter did.
func TestNemotronLatentAllLinear(t *testing.T) {
	m := loadModel(t, "nemotron_h-latent-tiny")
	a, err := New(m, Config{Rank: 4, Alpha: 8, TargetModules: []string{AllLinear}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	names := paramNames(a)
	for _, n := range []string{"backbone.layers.3.mixer.fc1_latent_proj.lora_A", "backbone.layers.3.mixer.fc1_latent_proj.lora_B",
		"backbone.layers.3.mixer.fc2_latent_proj.lora_A", "backbone.layers.3.mixer.fc2_latent_proj.lora_B"} {
		if !slices.ContainsFunc(names, func(s string) bool { return strings.Contains(s, n) }) {
			t.Errorf("no param %s in %v", n, names)
		}
	}
	if len(names) != 2*16 {
		t.Errorf("%d matrices, want 32 (16 modules)", len(names))
	}
	roundTrip(t, m, a, nil)
	experts, err := New(m, Config{Rank: 4, Alpha: 8, TargetModules: AllModules}, 3)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, m, experts, nil)

	checkMerge(t, m, a)
}
