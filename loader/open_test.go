package loader

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/internal/tinymodel"
)

var (
	tinyWeights = filepath.Join("..", "testdata", "models", "qwen3-tiny") // no tokenizer files
	tinyAdapter = filepath.Join("..", "testdata", "lora", "ours")         // an adapter of qwen3-tiny
)

func tinyModel(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "model")
	if err := tinymodel.Write(dir, tinyWeights); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestOpenWithAdapter(t *testing.T) {
	dir := tinyModel(t)
	l, err := Open(context.Background(), Spec{Model: dir, Adapter: tinyAdapter})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Base.Free()
	if l.Dir != dir || l.Backend.Name() != "cpu" || l.Tokenizer == nil || l.Adapter == nil {
		t.Fatalf("opened %+v", l)
	}
	if l.Model == l.Base {
		t.Error("Model is the base model: the adapter is not applied")
	}
	plain, err := Open(context.Background(), Spec{Model: dir, Backend: l.Backend})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Base.Free()
	if plain.Model != plain.Base || plain.Adapter != nil || plain.Backend != l.Backend {
		t.Errorf("without an adapter: Model %p, Base %p, Adapter %v; backend %p, given %p", plain.Model, plain.Base, plain.Adapter, plain.Backend, l.Backend)
	}
}

// TestOpenTokenizerOptional: a directory of weights alone opens for a
// caller that works from ids, and for no one else.
func TestOpenTokenizerOptional(t *testing.T) {
	l, err := Open(context.Background(), Spec{Model: tinyWeights, TokenizerOptional: true})
	if err != nil {
		t.Fatal(err)
	}
	l.Base.Free()
	if l.Tokenizer != nil {
		t.Error("a tokenizer from a directory without tokenizer files")
	}
	if _, err := Open(context.Background(), Spec{Model: tinyWeights}); err == nil || !strings.Contains(err.Error(), "tokenizer_config.json") {
		t.Errorf("weights without a tokenizer: %v", err)
	}
}

// TestOpenRefuses: each bad part is one error line naming the Spec field
// at fault; a tokenizer larger than the model's vocabulary is refused
// whether or not the caller needs the tokenizer.
func TestOpenRefuses(t *testing.T) {
	dir := tinyModel(t)
	mismatch := filepath.Join(t.TempDir(), "mismatch")
	if err := tinymodel.WriteVocabMismatch(mismatch, tinyWeights); err != nil {
		t.Fatal(err)
	}
	vocab := "the tokenizer has 513 tokens but the model's vocab_size is 512; they do not belong together"
	cases := []struct {
		name string
		spec Spec
		want []string
	}{
		{"no model", Spec{}, []string{"no model given"}},
		{"missing model", Spec{Model: filepath.Join(dir, "none")}, []string{"model = ", "none"}},
		{"unknown device", Spec{Model: dir, Device: "tpu"}, []string{`device = "tpu"`, "not available"}},
		{"missing adapter", Spec{Model: dir, Adapter: filepath.Join(dir, "no-adapter")}, []string{"adapter = ", "no-adapter"}},
		{"vocabulary mismatch", Spec{Model: mismatch}, []string{"model = ", vocab}},
		{"vocabulary mismatch, ids only", Spec{Model: mismatch, TokenizerOptional: true}, []string{vocab}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := Open(context.Background(), c.spec)
			if err == nil {
				l.Base.Free()
				t.Fatal("opened")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("several lines: %q", msg)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q does not mention %q", msg, w)
				}
			}
		})
	}
}
