package tinymodel

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/grpo-dev/grpo/model/safetensors"
)

// WriteBF16Copy writes the single-file model in src to dst with every
// tensor rounded to bf16 (the loader keeps the tensors real checkpoints
// ship in f32 in f32 whatever their stored dtype): a bf16 checkpoint of a
// family whose committed tiny model is f32, such as a bf16 Qwen2 (as
// Qwen2.5 checkpoints ship, with bf16 q/k/v biases), Qwen3.5-MoE or
// Nemotron-H. The tensors whose names end in one of keepF32 stay f32, as
// a checkpoint ships its router, say.
func WriteBF16Copy(dst, src string, keepF32 ...string) error {
	cfg, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dst, "config.json"), cfg, 0o644); err != nil {
		return err
	}
	f, err := safetensors.Open(filepath.Join(src, "model.safetensors"))
	if err != nil {
		return err
	}
	defer f.Close()
	var out []safetensors.Tensor
	for _, name := range f.Names() {
		t, _ := f.Tensor(name)
		v, err := t.Float32s()
		if err != nil {
			return err
		}
		conv := safetensors.NewBF16
		for _, k := range keepF32 {
			if strings.HasSuffix(name, k) {
				conv = safetensors.NewF32
			}
		}
		b, err := conv(name, t.Shape, v)
		if err != nil {
			return err
		}
		out = append(out, b)
	}
	return safetensors.Write(filepath.Join(dst, "model.safetensors"), out, nil)
}
