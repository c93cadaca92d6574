package trainer

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// OptimizerConfig is the [optimizer] section: AdamW with a learning-rate
// schedule and global gradient-norm clipping.
type OptimizerConfig struct {
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

// DefaultOptimizer is the [optimizer] section when a config leaves it out.
// lr 1e-4 is Prime Intellect Lab's hosted LoRA default.
func DefaultOptimizer() OptimizerConfig {
	return OptimizerConfig{LR: 1e-4, Betas: [2]float64{0.9, 0.999}, Eps: 1e-8, WeightDecay: 0,
		MaxGradNorm: 1.0, Schedule: "constant"}
}

// Validate reports the first invalid setting as "[optimizer] key: problem".
func (c OptimizerConfig) Validate() error {
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

// LRAt is the learning rate of update number step (1-based) of maxSteps.
func (c OptimizerConfig) LRAt(step, maxSteps int) float64 {
	if c.WarmupSteps > 0 && step <= c.WarmupSteps {
		return c.LR * float64(step) / float64(c.WarmupSteps)
	}
	if c.Schedule != "cosine" || maxSteps <= c.WarmupSteps {
		return c.LR
	}
	progress := float64(step-c.WarmupSteps) / float64(maxSteps-c.WarmupSteps)
	floor := c.LR * c.MinLRRatio
	return floor + (c.LR-floor)*0.5*(1+math.Cos(math.Pi*math.Min(progress, 1)))
}

// Param is one trainable tensor and its gradient.
type Param struct {
	Name        string
	Value, Grad kernels.Buffer
}

// AdamW updates params with decoupled weight decay. Its state (moments and
// step count) is exposed for checkpoints, which restore it bit-exactly.
type AdamW struct {
	cfg    OptimizerConfig
	be     kernels.Backend
	params []Param
	m, v   []kernels.Buffer
	// Step counts the updates taken so far.
	Step int
}

// NewAdamW allocates zeroed moments for params.
func NewAdamW(be kernels.Backend, params []Param, cfg OptimizerConfig) (*AdamW, error) {
	o := &AdamW{cfg: cfg, be: be, params: params}
	for _, p := range params {
		o.m = append(o.m, be.Alloc(kernels.F32, p.Value.Len()))
		o.v = append(o.v, be.Alloc(kernels.F32, p.Value.Len()))
	}
	return o, nil
}

// StepStats report one update.
type StepStats struct {
	GradNorm float64 // global L2 norm before clipping
	LR       float64
}

// Update clips the gradients to MaxGradNorm, takes one AdamW step at the
// scheduled learning rate and zeroes the gradients. A non-finite gradient
// norm aborts before any parameter changes.
func (o *AdamW) Update(maxSteps int) (StepStats, error) {
	be := o.be
	norm, err := o.gradNorm()
	if err != nil {
		return StepStats{}, err
	}
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return StepStats{GradNorm: norm}, fmt.Errorf("gradient norm is %v: the loss produced NaN or Inf; parameters were left unchanged", norm)
	}
	if c := o.cfg.MaxGradNorm; c > 0 && norm > c {
		for _, p := range o.params {
			be.Scale(p.Grad, float32(c/(norm+1e-6)), p.Grad.Len())
		}
	}
	o.Step++
	lr := o.cfg.LRAt(o.Step, maxSteps)
	for i, p := range o.params {
		be.AdamW(p.Value, p.Grad, o.m[i], o.v[i], p.Value.Len(), kernels.AdamWParams{
			LR: float32(lr), Beta1: float32(o.cfg.Betas[0]), Beta2: float32(o.cfg.Betas[1]),
			Eps: float32(o.cfg.Eps), WeightDecay: float32(o.cfg.WeightDecay), Step: o.Step})
		be.Fill(p.Grad, 0, p.Grad.Len())
	}
	return StepStats{GradNorm: norm, LR: lr}, be.Sync()
}

func (o *AdamW) gradNorm() (float64, error) {
	out := o.be.Alloc(kernels.F32, 1)
	defer o.be.Free(out)
	var total float64
	one := make([]float32, 1)
	for _, p := range o.params {
		o.be.SumSquares(out, p.Grad, p.Grad.Len())
		o.be.Download(one, out)
		total += float64(one[0])
	}
	return math.Sqrt(total), o.be.Sync()
}

// State returns the optimizer's moment buffers, named after their
// parameters ("<name>.exp_avg", "<name>.exp_avg_sq"), for checkpoints.
func (o *AdamW) State() []Param {
	var st []Param
	for i, p := range o.params {
		st = append(st, Param{Name: p.Name + ".exp_avg", Value: o.m[i]}, Param{Name: p.Name + ".exp_avg_sq", Value: o.v[i]})
	}
	return st
}
