package model

import "math"

// RopeInvFreq returns the rotary inverse frequencies, one per pair of
// rotated head dimensions (RotaryDim/2: all of the head but under a
// partial rotary factor), with llama3 frequency scaling applied when
// configured. They are computed in float64 and rounded once, so the
// result does not depend on accumulated float32 error.
func (c *Config) RopeInvFreq() []float32 {
	dim := c.RotaryDim()
	half := dim / 2
	out := make([]float32, half)
	for i := range half {
		inv := 1 / math.Pow(c.RopeTheta, float64(2*i)/float64(dim))
		if rs := c.RopeScaling; rs != nil && rs.Type == "llama3" {
			inv = llama3Scale(inv, rs)
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
