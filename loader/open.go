package loader

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/model/hub"
	"github.com/grpo-dev/grpo/tokenizer"
)

// Spec names a model to open and where to put it.
type Spec struct {
	// Model is a model directory or a hub id such as Qwen/Qwen3-0.6B.
	Model string
	// Backend receives the weights; nil opens Device.
	Backend kernels.Backend
	// Device names the backend to open when Backend is nil ("" is "cpu").
	Device string
	// Adapter is a PEFT LoRA adapter directory to apply; "" for none.
	Adapter string
	// Download hears how a download of Model advances; nil is silent.
	Download func(hub.FileProgress)
	// TokenizerOptional lets a directory without tokenizer files open,
	// with Loaded.Tokenizer nil, for callers that work from token ids
	// alone. A directory that has them is still checked against the model.
	TokenizerOptional bool
	// Experts, when not nil, makes Open load only this rank's share of a
	// mixture-of-experts model's experts, sharded over the collective's
	// ranks (model.LoadExperts: expert parallelism), and of Adapter's
	// experts' pairs (lora.Load).
	Experts kernels.Collective
	// Log receives Open's one-line notes (checkpoint tensors it skipped,
	// such as a vision tower); nil drops them.
	Log func(string)
}

// Loaded is a model opened for use.
type Loaded struct {
	// Dir is the local directory Spec.Model resolved to.
	Dir     string
	Backend kernels.Backend
	// Tokenizer is nil only under Spec.TokenizerOptional, for a directory
	// without tokenizer files.
	Tokenizer *tokenizer.Tokenizer
	// Base is the model without the adapter.
	Base *model.Model
	// Adapter is Spec.Adapter's adapter, nil without one.
	Adapter *lora.Adapter
	// Model is Base with Adapter applied (Base itself without one).
	Model *model.Model
}

// Open opens s.Model on its backend with its tokenizer and adapter. Every
// failure is one error line naming the Spec field at fault (model = ...,
// adapter = ..., device = ...); weights loaded before a failure are freed.
func Open(ctx context.Context, s Spec) (*Loaded, error) {
	l := &Loaded{Backend: s.Backend}
	var err error
	if l.Backend == nil {
		if l.Backend, err = OpenBackend(s.Device); err != nil {
			return nil, err
		}
	}
	if l.Dir, err = Resolve(ctx, s.Model, s.Download); err != nil {
		return nil, err
	}
	if l.Tokenizer, err = loadTokenizer(l.Dir, s.TokenizerOptional); err != nil {
		return nil, fmt.Errorf("model = %q: %w", s.Model, err)
	}
	if s.Experts != nil {
		l.Base, err = model.LoadExperts(l.Dir, l.Backend, s.Experts)
	} else {
		l.Base, err = model.Load(l.Dir, l.Backend)
	}
	if err != nil {
		return nil, fmt.Errorf("model = %q: %w", s.Model, err)
	}
	if l.Base.Skipped != "" && s.Log != nil {
		s.Log(l.Base.Skipped)
	}
	if err := checkVocabulary(l.Tokenizer, l.Base); err != nil {
		l.Base.Free()
		return nil, fmt.Errorf("model = %q: %w", s.Model, err)
	}
	l.Model = l.Base
	if s.Adapter != "" {
		if l.Adapter, err = lora.Load(s.Adapter, l.Base); err != nil {
			l.Base.Free()
			return nil, fmt.Errorf("adapter = %q: %w", s.Adapter, err)
		}
		l.Model = l.Base.WithAdapter(l.Adapter)
	}
	return l, nil
}

// loadTokenizer reads dir's tokenizer; with optional, a directory that
// has no tokenizer files at all gives nil.
func loadTokenizer(dir string, optional bool) (*tokenizer.Tokenizer, error) {
	if optional && !exists(filepath.Join(dir, "tokenizer.json")) && !exists(filepath.Join(dir, "tokenizer_config.json")) {
		return nil, nil
	}
	return tokenizer.Load(dir)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// checkVocabulary refuses a tokenizer that can produce ids the model has
// no embedding row for: such a pair would index past the embedding table
// (or train rows no one can sample), so they do not belong together.
func checkVocabulary(tok *tokenizer.Tokenizer, m *model.Model) error {
	if tok == nil || tok.VocabSize() <= m.Config.VocabSize {
		return nil
	}
	return fmt.Errorf("the tokenizer has %d tokens but the model's vocab_size is %d; they do not belong together", tok.VocabSize(), m.Config.VocabSize)
}
