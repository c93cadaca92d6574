package kernels

import "fmt"

// ClampedGLU is the activation of gpt-oss's experts (transformers'
// GptOssExperts._apply_gate): the gate clamped above at Limit
// (swiglu_limit), the up projection clamped to ±Limit, and
// (up + 1)·gate·σ(Alpha·gate) — a SwiGLU whose sigmoid is sharpened by
// Alpha (1.702, GELU's sigmoid approximation) and whose up is shifted
// by one.
type ClampedGLU struct{ Alpha, Limit float32 }

// Check returns an error unless c is usable: a positive Alpha and Limit.
func (c ClampedGLU) Check() error {
	if !(c.Alpha > 0) || !(c.Limit > 0) {
		return fmt.Errorf("clamped GLU: alpha %v and limit %v must be positive", c.Alpha, c.Limit)
	}
	return nil
}
