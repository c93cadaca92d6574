package optim

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// Param is one trainable tensor and its gradient.
type Param struct {
	Name        string
	Value, Grad kernels.Buffer
}

// AdamW updates params with decoupled weight decay. Its state (moments and
// step count) is exposed for checkpoints, which restore it bit-exactly.
type AdamW struct {
	cfg    Config
	be     kernels.Backend
	params []Param
	m, v   []kernels.Buffer
	// Step counts the updates taken so far.
	Step int
	// shards, when set, marks the parameters other ranks do not hold
	// (ShardAcross); nil: this optimizer sees every parameter.
	shards *shards
}

// NewAdamW allocates zeroed moments for params.
func NewAdamW(be kernels.Backend, params []Param, cfg Config) (*AdamW, error) {
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

// NextLR is the learning rate the next Update would take.
func (o *AdamW) NextLR(maxSteps int) float64 { return o.cfg.LRAt(o.Step+1, maxSteps) }

// gradNorm reduces each parameter's squared gradient on the device into
// its own element of one buffer and reads them back together: one wait
// per optimiser step, not one per parameter. The host sums them in
// float64, in parameter order (a sharded optimizer's own apart, summed
// over the ranks: splitSquares).
func (o *AdamW) gradNorm() (float64, error) {
	if len(o.params) == 0 {
		if err := o.be.Sync(); err != nil {
			return 0, err
		}
		total, err := o.splitSquares(nil) // a sharded rank still joins the sum
		return math.Sqrt(total), err
	}
	out := o.be.Alloc(kernels.F32, len(o.params))
	defer o.be.Free(out)
	for i, p := range o.params {
		o.be.SumSquares(out.Slice(i, 1), p.Grad, p.Grad.Len())
	}
	sq := make([]float32, len(o.params))
	o.be.Download(sq, out)
	if err := o.be.Sync(); err != nil {
		return 0, err
	}
	total, err := o.splitSquares(sq)
	return math.Sqrt(total), err
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
