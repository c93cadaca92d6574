package trainer

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/model/safetensors"
)

// TestNaNLogitsStopTheRun: a model whose weights make the logits NaN ends
// the run at step 1 with an error naming the step, and writes no adapter
// (nothing non-finite reaches the LoRA parameters).
func TestNaNLogitsStopTheRun(t *testing.T) {
	dir := t.TempDir()
	cfg := writeRunFixture(t, dir, 3, 0)
	st := filepath.Join(dir, "model", "model.safetensors")
	f, err := safetensors.Open(st)
	if err != nil {
		t.Fatal(err)
	}
	var ts []safetensors.Tensor
	for _, name := range f.Names() {
		tn, _ := f.Tensor(name)
		v, _ := tn.Float32s()
		if name == "model.norm.weight" {
			v[0] = float32(math.NaN())
		}
		nt, _ := safetensors.NewF32(name, tn.Shape, append([]float32(nil), v...))
		ts = append(ts, nt)
	}
	f.Close()
	if err := safetensors.Write(st, ts, nil); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	_, err = runConfig(t, cfg, WithOutput(out))
	if err == nil || !strings.Contains(err.Error(), "step 1") {
		t.Fatalf("want an error naming step 1, got %v", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error spans lines: %q", err)
	}
	t.Log(err)
	if _, statErr := os.Stat(filepath.Join(out, "adapter")); statErr == nil {
		t.Error("an adapter was written after NaN logits")
	}
}
