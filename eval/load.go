package eval

import (
	"context"
	"fmt"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/model/hub"
	"github.com/grpo-dev/grpo/tokenizer"
)

// loadModel opens s's model (and adapter) on o.Backend or s's device.
func loadModel(ctx context.Context, s config.EvalSpec, o SpecOptions) (*model.Model, *tokenizer.Tokenizer, error) {
	be := o.Backend
	if be == nil {
		var err error
		if be, err = kernels.Open(s.Device); err != nil {
			return nil, nil, fmt.Errorf("device %q: %w", s.Device, err)
		}
	}
	dir, err := hub.Resolve(ctx, s.Model, hub.Options{Progress: o.Download})
	if err != nil {
		return nil, nil, fmt.Errorf("model %q: %w", s.Model, err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("model %q: %w", s.Model, err)
	}
	m, err := model.Load(dir, be)
	if err != nil {
		return nil, nil, fmt.Errorf("model %q: %w", s.Model, err)
	}
	if tok.VocabSize() > m.Config.VocabSize {
		return nil, nil, fmt.Errorf("model %s: the tokenizer has %d tokens but the model's vocab_size is %d; they do not belong together", s.Model, tok.VocabSize(), m.Config.VocabSize)
	}
	if s.Adapter != "" {
		a, err := lora.Load(s.Adapter, m)
		if err != nil {
			return nil, nil, fmt.Errorf("adapter %q: %w", s.Adapter, err)
		}
		m = m.WithAdapter(a)
	}
	return m, tok, nil
}
