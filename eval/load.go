package eval

import (
	"context"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/loader"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/tokenizer"
)

// loadModel opens s's model (and adapter) on o.Backend or s's device.
func loadModel(ctx context.Context, s config.EvalSpec, o SpecOptions) (*model.Model, *tokenizer.Tokenizer, error) {
	l, err := loader.Open(ctx, loader.Spec{Model: s.Model, Device: s.Device, Backend: o.Backend, Adapter: s.Adapter, Download: o.Download})
	if err != nil {
		return nil, nil, err
	}
	return l.Model, l.Tokenizer, nil
}
