package model

import "math"

// RopeInvFreq returns the rotary inverse frequencies, one per pair of
// rotated head dimensions (RotaryDim/2: all of the head but under a
// partial rotary factor), with llama3 or YaRN frequency scaling applied
// when configured. They are computed in float64 and rounded once, so the
// result does not depend on accumulated float32 error.
func (c *Config) RopeInvFreq() []float32 {
	dim := c.RotaryDim()
	half := dim / 2
	out := make([]float32, half)
	if c.Arch().Nemotron {
		return out // attention without RoPE: one pair at frequency 0 (RotaryDim)
	}
	for i := range half {
		inv := 1 / math.Pow(c.RopeTheta, float64(2*i)/float64(dim))
		if rs := c.RopeScaling; rs != nil && rs.Type == "llama3" {
			inv = llama3Scale(inv, rs)
		} else if rs != nil && rs.Type == "yarn" {
			inv = yarnScale(inv, i, dim, c.RopeTheta, rs)
		}
		out[i] = float32(inv)
	}
	return out
}

// llama3Scale applies Llama 3.1's rule: long wavelengths are slowed by
// factor, short ones kept, and the band between is interpolated smoothly.
func llama3Scale(inv float64, rs *RopeScaling) float64 {
	old := float64(rs.OriginalMaxPositionEmbeddings)
	lowWavelen := old / rs.LowFreqFactor
	highWavelen := old / rs.HighFreqFactor
	wavelen := 2 * math.Pi / inv
	switch {
	case wavelen < highWavelen:
		return inv
	case wavelen > lowWavelen:
		return inv / rs.Factor
	default:
		smooth := (old/wavelen - rs.LowFreqFactor) / (rs.HighFreqFactor - rs.LowFreqFactor)
		return (1-smooth)*inv/rs.Factor + smooth*inv
	}
}

// The YaRN rule, as transformers' _compute_yarn_parameters computes it:
// with d the rotary dims, the pair i's frequency is blended between the
// original (extrapolation) and the one slowed by factor (interpolation)
// by a linear ramp over the pairs between the dimensions at which
// beta_fast and beta_slow rotations fit in the original context,
//
//	dim(r) = d·ln(L / (2π·r)) / (2·ln θ),  low = dim(β_fast), high = dim(β_slow)
//
// (rounded outward with truncate), ramp(i) = clamp((i − low)/(high −
// low), 0, 1), inv = ramp·inv/factor + (1 − ramp)·inv.
func yarnScale(inv float64, i, dim int, theta float64, rs *RopeScaling) float64 {
	fast, slow := rs.BetaFast, rs.BetaSlow
	if fast == 0 {
		fast = 32
	}
	if slow == 0 {
		slow = 1
	}
	corr := func(rot float64) float64 {
		return float64(dim) * math.Log(float64(rs.OriginalMaxPositionEmbeddings)/(rot*2*math.Pi)) / (2 * math.Log(theta))
	}
	low, high := corr(fast), corr(slow)
	if rs.Truncate == nil || *rs.Truncate {
		low, high = math.Floor(low), math.Ceil(high)
	}
	low, high = math.Max(low, 0), math.Min(high, float64(dim-1))
	if low == high {
		high += 0.001
	}
	ramp := math.Min(math.Max((float64(i)-low)/(high-low), 0), 1)
	return inv/rs.Factor*ramp + inv*(1-ramp)
}

// RopeAttentionFactor is the scale transformers' rotary embedding
// multiplies cos and sin by (attention_scaling): YaRN's, 1 otherwise.
// Scaling both q and k by it scales the attention scores by its square,
// which the model folds into the softmax scale (attnScale).
func (c *Config) RopeAttentionFactor() float64 {
	rs := c.RopeScaling
	if rs == nil || rs.Type != "yarn" {
		return 1
	}
	if rs.AttentionFactor != nil {
		return *rs.AttentionFactor
	}
	mscale := func(scale, m float64) float64 {
		if scale <= 1 {
			return 1
		}
		return 0.1*m*math.Log(scale) + 1
	}
	if rs.MScale != 0 && rs.MScaleAllDim != 0 {
		return mscale(rs.Factor, rs.MScale) / mscale(rs.Factor, rs.MScaleAllDim)
	}
	return mscale(rs.Factor, 1)
}
