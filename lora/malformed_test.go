package lora

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/model/safetensors"
)

// TestLoadMalformed: every bad adapter gives one error line naming what is
// wrong (never a panic).
func TestLoadMalformed(t *testing.T) {
	m := loadModel(t, "qwen3-tiny")
	a, _ := New(m, Config{Rank: 2, Alpha: 4, TargetModules: []string{"q_proj", "v_proj"}}, 3)
	good := func(t *testing.T) string { return writeVariant(t, a, nil, safetensors.F32, nil) }
	withConfig := func(cfg map[string]any) func(t *testing.T) string {
		return func(t *testing.T) string { return writeVariant(t, a, nil, safetensors.F32, cfg) }
	}
	withTensors := func(edit func([]safetensors.Tensor) []safetensors.Tensor) func(t *testing.T) string {
		return func(t *testing.T) string {
			dir := good(t)
			var ts []safetensors.Tensor
			for _, p := range a.Params() {
				tt, _ := safetensors.NewF32(p.Name, p.Shape[:], download(m.Backend, p.Value))
				ts = append(ts, tt)
			}
			if err := safetensors.Write(filepath.Join(dir, WeightsFileName), edit(ts), nil); err != nil {
				t.Fatal(err)
			}
			return dir
		}
	}
	f32 := func(name string, shape []int, fill float32) safetensors.Tensor {
		v := make([]float32, shape[0]*shape[1])
		for i := range v {
			v[i] = fill
		}
		tt, _ := safetensors.NewF32(name, shape, v)
		return tt
	}
	drop := func(name string) func([]safetensors.Tensor) []safetensors.Tensor {
		return func(ts []safetensors.Tensor) []safetensors.Tensor {
			var out []safetensors.Tensor
			for _, t := range ts {
				if t.Name != name {
					out = append(out, t)
				}
			}
			return out
		}
	}
	replace := func(nt safetensors.Tensor) func([]safetensors.Tensor) []safetensors.Tensor {
		return func(ts []safetensors.Tensor) []safetensors.Tensor { return append(drop(nt.Name)(ts), nt) }
	}
	qA := "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"
	for _, c := range []struct {
		name  string
		setup func(t *testing.T) string
		want  string
	}{
		{"no dir", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") }, "adapter_config.json: not found"},
		{"bad json", func(t *testing.T) string {
			d := good(t)
			os.WriteFile(filepath.Join(d, ConfigFileName), []byte("{\"r\": 8,"), 0o644)
			return d
		}, "invalid JSON"},
		{"json array", func(t *testing.T) string {
			d := good(t)
			os.WriteFile(filepath.Join(d, ConfigFileName), []byte("[1]"), 0o644)
			return d
		}, "invalid JSON"},
		{"no weights", func(t *testing.T) string {
			d := good(t)
			os.Remove(filepath.Join(d, WeightsFileName))
			return d
		}, "adapter_model.safetensors: not found"},
		{"pickle weights", func(t *testing.T) string {
			d := good(t)
			os.Rename(filepath.Join(d, WeightsFileName), filepath.Join(d, "adapter_model.bin"))
			return d
		}, "adapter_model.bin (a PyTorch pickle)"},
		{"peft type", withConfig(map[string]any{"peft_type": "PREFIX_TUNING"}), `peft_type "PREFIX_TUNING" is not supported`},
		{"no peft type", withConfig(map[string]any{"peft_type": nil}), "peft_type is missing"},
		{"task type", withConfig(map[string]any{"task_type": "SEQ_CLS"}), `task_type "SEQ_CLS" is not supported`},
		{"dora", withConfig(map[string]any{"use_dora": true}), "DoRA (use_dora: true) is not supported"},
		{"bias", withConfig(map[string]any{"bias": "lora_only"}), `bias "lora_only" is not supported`},
		{"modules_to_save", withConfig(map[string]any{"modules_to_save": []string{"lm_head"}}), `modules_to_save = ["lm_head"] is not supported`},
		{"fan_in_fan_out", withConfig(map[string]any{"fan_in_fan_out": true}), "fan_in_fan_out: true"},
		{"layers_to_transform", withConfig(map[string]any{"layers_to_transform": []int{0}}), "layers_to_transform = [0] is not supported"},
		{"lora_bias", withConfig(map[string]any{"lora_bias": true}), "lora_bias: true"},
		{"r string", withConfig(map[string]any{"r": "8"}), `r = "8": the rank must be a positive integer`},
		{"r fraction", withConfig(map[string]any{"r": 2.5}), "r = 2.5"},
		{"alpha", withConfig(map[string]any{"lora_alpha": -1}), "lora_alpha = -1"},
		{"use_rslora type", withConfig(map[string]any{"use_rslora": "yes"}), "use_rslora must be true or false"},
		{"targets type", withConfig(map[string]any{"target_modules": 5}), "target_modules must be a list of module names or a string, got 5"},
		{"targets regex", withConfig(map[string]any{"target_modules": "(?!x).*"}), "cannot compile"},
		{"targets none", withConfig(map[string]any{"target_modules": []string{"lm_head"}}), `target_modules ["lm_head"] selects none`},
		{"rank pattern", withConfig(map[string]any{"rank_pattern": map[string]any{"q_proj": 0}}), `rank_pattern["q_proj"] = 0`},
		{"alpha pattern", withConfig(map[string]any{"alpha_pattern": []int{1}}), "alpha_pattern must be an object"},
		{"rank pattern shape", withConfig(map[string]any{"rank_pattern": map[string]any{"v_proj": 3}}), "rank_pattern gives 3"},
		{"r mismatch", withConfig(map[string]any{"r": 4}), "want [4 64] [rank, in_features] (r = 4"},
		{"untargeted tensor", withConfig(map[string]any{"target_modules": []string{"q_proj"}}), "adapts model.layers.0.self_attn.v_proj, which target_modules [\"q_proj\"] does not select"},
		{"missing B", withTensors(drop("base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight")), `tensor "base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight" is missing`},
		{"missing module", withConfig(map[string]any{"target_modules": []string{"q_proj", "v_proj", "o_proj"}}), `"base_model.model.model.layers.0.self_attn.o_proj.lora_A.weight" is missing`},
		{"unknown key", withTensors(func(ts []safetensors.Tensor) []safetensors.Tensor {
			return append(ts, f32("base_model.model.lm_head.lora_A.weight", []int{2, 64}, 0))
		}), `tensor "base_model.model.lm_head.lora_A.weight" is not a LoRA matrix`},
		{"magnitude vector", withTensors(func(ts []safetensors.Tensor) []safetensors.Tensor {
			return append(ts, f32("base_model.model.model.layers.0.self_attn.q_proj.lora_magnitude_vector", []int{1, 128}, 1))
		}), "is not a LoRA matrix"},
		{"layer range", withTensors(func(ts []safetensors.Tensor) []safetensors.Tensor {
			return append(ts, f32("base_model.model.model.layers.7.self_attn.q_proj.lora_A.weight", []int{2, 64}, 0))
		}), "is for layer 7 but the model has 2 layers"},
		{"wrong shape", withTensors(replace(f32(qA, []int{2, 32}, 0))), "has shape [2 32], want [2 64]"},
		{"transposed B", withTensors(replace(f32("base_model.model.model.layers.0.self_attn.v_proj.lora_B.weight", []int{2, 64}, 0))), "want [64 2] [out_features, rank]"},
		{"nan", withTensors(replace(f32(qA, []int{2, 64}, float32(math.NaN())))), "holds NaN at element 0"},
		{"duplicate", withTensors(func(ts []safetensors.Tensor) []safetensors.Tensor {
			return append(ts, f32(strings.Replace(qA, ".weight", ".default.weight", 1), []int{2, 64}, 0))
		}), "hold the same matrix"},
		{"int tensor", withTensors(func(ts []safetensors.Tensor) []safetensors.Tensor {
			tt, _ := safetensors.NewTensor(qA, safetensors.I32, []int{2, 64}, make([]byte, 4*128))
			return append(drop(qA)(ts), tt)
		}), "does not convert to float32"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(c.setup(t), m)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v\nwant one line containing %s", err, c.want)
			}
		})
	}
}

// FuzzParsePEFTConfig: any bytes give a config or an error, never a panic,
// and a parsed config is usable (rank ≥ 1, alpha > 0).
func FuzzParsePEFTConfig(f *testing.F) {
	for _, s := range []string{
		`{"peft_type":"LORA","r":8,"lora_alpha":16,"target_modules":["q_proj"]}`,
		`{"peft_type":"LORA","target_modules":"all-linear","rank_pattern":{"q_proj":4},"alpha_pattern":{"model.layers.0.mlp.up_proj":2}}`,
		`{"peft_type":"LORA","target_modules":".*\\.(q|v)_proj","use_rslora":true,"lora_dropout":0.1}`,
		`{"peft_type":"LORA","r":1e300}`, `{"peft_type":"LORA","rank_pattern":{"(":1}}`, `null`, `{}`, `[]`, `{"r":}`,
	} {
		f.Add([]byte(s))
	}
	for _, name := range []string{"ours", "theirs"} {
		if b, err := os.ReadFile(filepath.Join(root, "testdata", "lora", name, ConfigFileName)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pc, err := parsePEFTConfig(data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		if pc.rank < 1 || !(pc.alpha > 0) {
			t.Fatalf("accepted rank %d alpha %v", pc.rank, pc.alpha)
		}
		for l := range 3 {
			for _, p := range AllModules {
				name := "model.layers." + string(rune('0'+l)) + ".self_attn." + p
				pc.targets.match(name)
				pc.exclude.match(name)
				if v, ok := lookup(pc.rankPattern, name); ok && (v < 1 || v != math.Trunc(v)) {
					t.Fatalf("rank pattern value %v", v)
				}
			}
		}
	})
}
