package safetensors

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// The tiny models checked in under testdata/models (written by
// testdata/gen with this package's writer) open through OpenDir, sharded
// or not, and hold finite float weights (and U8 MXFP4 blocks and scales,
// gpt-oss's experts, which the model package decodes).
func TestCheckedInModels(t *testing.T) {
	dirs, err := filepath.Glob("../../testdata/models/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no models under testdata/models (%v); run go run ./testdata/gen", err)
	}
	for _, dir := range dirs {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		s, err := OpenDir(dir)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		// Vision-language checkpoints (Qwen3.5) keep the text model under
		// model.language_model; Nemotron-H's under backbone.
		_, plain := s.Tensor("model.embed_tokens.weight")
		_, nested := s.Tensor("model.language_model.embed_tokens.weight")
		_, backbone := s.Tensor("backbone.embeddings.weight")
		if !plain && !nested && !backbone {
			t.Errorf("%s: no model.embed_tokens.weight, model.language_model.embed_tokens.weight nor backbone.embeddings.weight", dir)
		}
		for _, name := range s.Names() {
			tensor, _ := s.Tensor(name)
			if tensor.DType == U8 {
				if len(tensor.Bytes()) != tensor.NumElements() || tensor.NumElements() == 0 {
					t.Errorf("%s: U8 tensor %q holds %d bytes", dir, name, len(tensor.Bytes()))
				}
				continue
			}
			v, err := tensor.Float32s()
			if err != nil {
				t.Errorf("%s: %v", dir, err)
				continue
			}
			for _, x := range v {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					t.Errorf("%s: tensor %q holds %g", dir, name, x)
					break
				}
			}
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}
}
