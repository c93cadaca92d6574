package bench

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

// WeightDType is the dtype of the projection weights (what the GEMMs read).
func WeightDType(m *model.Model) kernels.DType {
	if len(m.W.Layers) > 0 && m.W.Layers[0].Q != nil {
		return m.W.Layers[0].Q.DType()
	}
	return m.W.Embed.DType()
}

// RandomModel is a model of shape cfg on be with random weights, drawn on
// every core straight into the dtype the GEMMs will read: an 8B shape
// starts in seconds. dtype is "bf16", "f32" or "auto" (bf16 everywhere but
// the CPU backend, as loaded checkpoints are).
func RandomModel(cfg *model.Config, be kernels.Backend, dtype string) (*model.Model, error) {
	dt := kernels.F32
	switch {
	case dtype == "bf16" || (dtype == "auto" && be.Name() != "cpu"):
		dt = kernels.BF16
	case dtype != "f32" && dtype != "auto":
		return nil, fmt.Errorf("bench: weights dtype %q: want bf16, f32 or auto", dtype)
	}
	m := model.NewRandomParallel(cfg, be, 1, dt)
	if err := be.Sync(); err != nil {
		m.Free()
		return nil, fmt.Errorf("bench: random weights: %w", err)
	}
	return m, nil
}
