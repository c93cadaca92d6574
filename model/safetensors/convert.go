package safetensors

import "math"

// Conversions between float32 and the two 16-bit float formats. Both
// narrowing conversions round to nearest, ties to even, as PyTorch's
// tensor.to(torch.float16 / torch.bfloat16) does, so a file we write from
// float32 holds the same bits as one torch would have written.

// F16ToF32 widens an IEEE binary16 value. Every binary16 value, subnormals
// included, is exactly representable in float32; NaN payloads are kept.
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0x1f: // infinity or NaN: all-ones exponent, payload shifted up
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case 0:
		// Zero or subnormal: mant·2^-24. mant has at most 10 bits and 2^-24
		// is a power of two, so the product is exact in float32.
		f := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			f = -f
		}
		return f
	default: // normal: rebias the exponent from 15 to 127
		return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
	}
}

// F32ToF16 narrows to IEEE binary16 with round-to-nearest-even, producing
// subnormals for tiny magnitudes and ±Inf for magnitudes >= 65520.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant == 0 {
			return sign | 0x7c00
		}
		// Keep NaN a NaN even when the payload lives only in the low bits.
		return sign | 0x7c00 | 0x200 | uint16(mant>>13)
	}
	if exp == 0 {
		// float32 zero or subnormal: below 2^-126, far under half of the
		// smallest binary16 subnormal (2^-25), so it rounds to signed zero.
		return sign
	}
	e := exp - 127
	if e > 15 {
		return sign | 0x7c00
	}
	if e >= -14 {
		h := uint32(e+15)<<10 | mant>>13
		rem := mant & 0x1fff
		// A carry out of the mantissa correctly bumps the exponent, and
		// from the largest finite value it yields 0x7c00 (Inf).
		if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	// Subnormal result: the value is full·2^(e-23); in units of 2^-24 (the
	// binary16 subnormal step) that is full·2^(e+1), i.e. full >> s.
	full := mant | 0x800000
	s := uint(-(e + 1))
	if s > 24 {
		// Then the value is below half a subnormal step: rounds to 0.
		return sign
	}
	h := full >> s
	rem := full & (1<<s - 1)
	half := uint32(1) << (s - 1)
	if rem > half || (rem == half && h&1 == 1) {
		h++ // may reach 0x400, which is exactly the smallest normal
	}
	return sign | uint16(h)
}

// BF16ToF32 widens a bfloat16 value: bfloat16 is the top half of a float32.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 narrows to bfloat16 with round-to-nearest-even. NaNs stay NaN
// (quieted) instead of rounding into Inf.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}
