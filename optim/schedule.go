package optim

import "math"

// LRAt is the learning rate of update number step (1-based) of maxSteps.
func (c Config) LRAt(step, maxSteps int) float64 {
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
