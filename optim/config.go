package optim

import (
	"fmt"
	"math"
)

// Config is the [optimizer] section of a run config: AdamW with a
// learning-rate schedule and global gradient-norm clipping.
type Config struct {
	LR          float64    `toml:"lr"`
	Betas       [2]float64 `toml:"betas"`
	Eps         float64    `toml:"eps"`
	WeightDecay float64    `toml:"weight_decay"`
	// MaxGradNorm clips the global L2 norm of all LoRA gradients; 0
	// disables clipping.
	MaxGradNorm float64 `toml:"max_grad_norm"`
	// WarmupSteps ramps the learning rate linearly from lr/WarmupSteps to lr.
	WarmupSteps int `toml:"warmup_steps"`
	// Schedule after warm-up: "constant" or "cosine" (down to MinLRRatio·lr
	// at max_steps).
	Schedule   string  `toml:"schedule"`
	MinLRRatio float64 `toml:"min_lr_ratio"`
}

// DefaultConfig is the [optimizer] section when a config leaves it out.
// lr 1e-4 is Prime Intellect Lab's hosted LoRA default.
func DefaultConfig() Config {
	return Config{LR: 1e-4, Betas: [2]float64{0.9, 0.999}, Eps: 1e-8, WeightDecay: 0,
		MaxGradNorm: 1.0, Schedule: "constant"}
}

// Validate reports the first invalid setting as "[optimizer] key: problem".
func (c Config) Validate() error {
	switch {
	case !(c.LR > 0) || math.IsInf(c.LR, 0):
		return fmt.Errorf("[optimizer] lr = %v: want a positive learning rate, e.g. 1e-4", c.LR)
	case !(c.Betas[0] >= 0 && c.Betas[0] < 1 && c.Betas[1] >= 0 && c.Betas[1] < 1):
		return fmt.Errorf("[optimizer] betas = %v: want two values in [0, 1), e.g. [0.9, 0.999]", c.Betas)
	case !(c.Eps > 0):
		return fmt.Errorf("[optimizer] eps = %v: want a small positive number, e.g. 1e-8", c.Eps)
	case !(c.WeightDecay >= 0):
		return fmt.Errorf("[optimizer] weight_decay = %v: want a value ≥ 0", c.WeightDecay)
	case !(c.MaxGradNorm >= 0):
		return fmt.Errorf("[optimizer] max_grad_norm = %v: want a value ≥ 0 (0 disables clipping)", c.MaxGradNorm)
	case c.WarmupSteps < 0:
		return fmt.Errorf("[optimizer] warmup_steps = %d: want a value ≥ 0", c.WarmupSteps)
	case c.Schedule != "constant" && c.Schedule != "cosine":
		return fmt.Errorf("[optimizer] schedule = %q: want \"constant\" or \"cosine\"", c.Schedule)
	case !(c.MinLRRatio >= 0 && c.MinLRRatio <= 1):
		return fmt.Errorf("[optimizer] min_lr_ratio = %v: want a value in [0, 1]", c.MinLRRatio)
	}
	return nil
}
