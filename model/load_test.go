package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels/cpu"
)

// copyModel copies a testdata model into a temp dir so a test can damage it.
func copyModel(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join("..", "testdata", "models", name)
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func editFile(t *testing.T, path string, edit func([]byte) []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, edit(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadRejectsBadModelDirs(t *testing.T) {
	cases := []struct {
		name, model string
		damage      func(dir string)
		want        string
	}{
		{"no weights", "qwen3-tiny", func(d string) { os.Remove(filepath.Join(d, "model.safetensors")) }, "model.safetensors"},
		{"truncated weights", "qwen3-tiny", func(d string) {
			editFile(t, filepath.Join(d, "model.safetensors"), func(b []byte) []byte { return b[:len(b)/2] })
		}, "model.safetensors"},
		{"shape mismatch", "qwen2-tiny", func(d string) {
			editFile(t, filepath.Join(d, "config.json"), func(b []byte) []byte {
				return []byte(strings.Replace(string(b), `"intermediate_size": 128`, `"intermediate_size": 96`, 1))
			})
		}, `"model.layers.0.mlp.gate_proj.weight" has shape [128 64] but config.json implies [96 64]`},
		{"missing tensor", "llama-tiny", func(d string) {
			editFile(t, filepath.Join(d, "config.json"), func(b []byte) []byte {
				return []byte(strings.Replace(string(b), `"num_hidden_layers": 2`, `"num_hidden_layers": 3`, 1))
			})
		}, `"model.layers.2.input_layernorm.weight" is missing`},
		{"missing shard", "llama-tiny-bf16-sharded", func(d string) {
			os.Remove(filepath.Join(d, "model-00002-of-00002.safetensors"))
		}, "model-00002-of-00002.safetensors"},
		{"unsupported type", "qwen3-tiny", func(d string) {
			editFile(t, filepath.Join(d, "config.json"), func(b []byte) []byte {
				return []byte(strings.Replace(string(b), `"model_type": "qwen3"`, `"model_type": "mistral"`, 1))
			})
		}, "supported model types: glm4_moe, gpt_oss, llama, nemotron_h, qwen2, qwen3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyModel(t, tc.model)
			tc.damage(dir)
			_, err := Load(dir, cpu.New())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans several lines: %q", err)
			}
		})
	}
}
