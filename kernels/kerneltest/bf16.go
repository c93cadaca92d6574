package kerneltest

import "math"

// RoundBF16 rounds v to the nearest bfloat16 (ties to even) and returns it
// widened back to float32: the value a BF16 buffer holds after Upload. NaN
// stays NaN and ±Inf stays ±Inf.
func RoundBF16(v float32) float32 {
	return BF16ToF32(F32ToBF16(v))
}

// F32ToBF16 returns the bfloat16 bit pattern nearest to v (ties to even).
func F32ToBF16(v float32) uint16 {
	u := math.Float32bits(v)
	if v != v {
		// Keep the sign and the top mantissa bits, force a quiet NaN so the
		// truncation cannot turn it into Inf.
		return uint16(u>>16) | 0x0040
	}
	// Add half an ulp of the bf16 result, plus one if the kept part is odd:
	// the carry then implements round-to-nearest, ties-to-even.
	lsb := (u >> 16) & 1
	u += 0x7fff + lsb
	return uint16(u >> 16)
}

// BF16ToF32 widens a bfloat16 bit pattern to float32 (exact).
func BF16ToF32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}
