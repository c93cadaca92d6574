package modeltest

import (
	"os"
	"path/filepath"

	"github.com/grpo-dev/grpo/model/safetensors"
)

// writeBF16Copy writes the single-file model in src to dst with every
// tensor rounded to bf16. The committed bf16 models (Qwen3, Llama) have no
// biases; a bf16 Qwen2 — as Qwen2.5 checkpoints ship — also puts bf16
// q/k/v biases through AddBias and the backward, which this covers.
func writeBF16Copy(dst, src string) error {
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
		b, err := safetensors.NewBF16(name, t.Shape, v)
		if err != nil {
			return err
		}
		out = append(out, b)
	}
	return safetensors.Write(filepath.Join(dst, "model.safetensors"), out, nil)
}
