package safetensors

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

func TestF16KnownValues(t *testing.T) {
	cases := []struct {
		bits uint16
		want float32
	}{
		{0x0000, 0},
		{0x3c00, 1},
		{0xc000, -2},
		{0x3555, 0.333251953125},
		{0x7bff, 65504},                          // largest finite
		{0x0400, 1.0 / 16384},                    // smallest normal, 2^-14
		{0x0001, float32(math.Ldexp(1, -24))},    // smallest subnormal
		{0x03ff, float32(math.Ldexp(1023, -24))}, // largest subnormal
		{0x8001, -float32(math.Ldexp(1, -24))},
		{0x7c00, float32(math.Inf(1))},
		{0xfc00, float32(math.Inf(-1))},
	}
	for _, c := range cases {
		if got := F16ToF32(c.bits); got != c.want {
			t.Errorf("F16ToF32(%#04x) = %g, want %g", c.bits, got, c.want)
		}
		if got := F32ToF16(c.want); got != c.bits {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", c.want, got, c.bits)
		}
	}
	if got := F16ToF32(0x8000); got != 0 || !math.Signbit(float64(got)) {
		t.Errorf("F16ToF32(0x8000) = %g, want -0", got)
	}
	for _, nan := range []uint16{0x7e00, 0x7c01, 0xfe00} {
		if got := F16ToF32(nan); !math.IsNaN(float64(got)) {
			t.Errorf("F16ToF32(%#04x) = %g, want NaN", nan, got)
		}
	}
	// A float32 NaN whose payload sits only in bits the narrowing drops must
	// still be a NaN, not Inf.
	if got := F32ToF16(math.Float32frombits(0x7f800001)); got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
		t.Errorf("F32ToF16(NaN with low payload) = %#04x, want a NaN", got)
	}
	// Rounding edges: 65519 rounds down to 65504, 65520 is the tie that
	// rounds to even, i.e. up to Inf; 2^-25 is the tie between 0 and the
	// smallest subnormal (rounds to 0, even), anything above it rounds up.
	edges := []struct {
		in   float32
		want uint16
	}{
		{65519, 0x7bff}, {65520, 0x7c00}, {1e6, 0x7c00},
		{float32(math.Ldexp(1, -25)), 0x0000},
		{math.Nextafter32(float32(math.Ldexp(1, -25)), 1), 0x0001},
		{float32(math.Ldexp(3, -25)), 0x0002}, // 1.5 steps: tie → even (2)
		{1 + float32(math.Ldexp(1, -11)), 0x3c00},
		{1 + float32(math.Ldexp(3, -11)), 0x3c02},
	}
	for _, e := range edges {
		if got := F32ToF16(e.in); got != e.want {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", e.in, got, e.want)
		}
	}
}

// Every non-NaN binary16 value survives the float32 round trip bit for bit.
func TestF16RoundTripAllValues(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := F16ToF32(uint16(h))
		if math.IsNaN(float64(f)) {
			continue
		}
		if back := F32ToF16(f); back != uint16(h) {
			t.Fatalf("F32ToF16(F16ToF32(%#04x)=%g) = %#04x", h, f, back)
		}
	}
}

// f16Reference rounds x to binary16 the slow way: it decodes every finite
// binary16 value exactly into float64, finds the neighbours of x and picks
// the nearer one, ties to the even bit pattern. It shares no code with
// F32ToF16.
type f16Reference struct {
	vals []float64 // non-negative finite values, ascending
	bits []uint16
}

func newF16Reference() *f16Reference {
	r := &f16Reference{}
	for h := 0; h < 0x7c00; h++ {
		e, m := h>>10, h&0x3ff
		var v float64
		if e == 0 {
			v = math.Ldexp(float64(m), -24)
		} else {
			v = math.Ldexp(float64(1024+m), e-25)
		}
		r.vals = append(r.vals, v)
		r.bits = append(r.bits, uint16(h))
	}
	return r
}

func (r *f16Reference) round(x float32) uint16 {
	sign := uint16(0)
	a := float64(x)
	if math.Signbit(a) {
		sign, a = 0x8000, -a
	}
	if a >= 65520 { // max finite + half an ulp (ulp 32 at the top)
		return sign | 0x7c00
	}
	i := sort.SearchFloat64s(r.vals, a) // r.vals[i] >= a
	if i < len(r.vals) && r.vals[i] == a {
		return sign | r.bits[i]
	}
	lo, hi := i-1, i
	if hi == len(r.vals) {
		return sign | 0x7c00
	}
	dl, dh := a-r.vals[lo], r.vals[hi]-a
	switch {
	case dl < dh:
		return sign | r.bits[lo]
	case dh < dl:
		return sign | r.bits[hi]
	case r.bits[lo]&1 == 0:
		return sign | r.bits[lo]
	default:
		return sign | r.bits[hi]
	}
}

func TestF32ToF16AgainstReference(t *testing.T) {
	ref := newF16Reference()
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(x float32) {
		if got, want := F32ToF16(x), ref.round(x); got != want {
			t.Fatalf("F32ToF16(%g = %#08x) = %#04x, reference %#04x", x, math.Float32bits(x), got, want)
		}
	}
	// Random bit patterns cover every exponent; values near the f16 range
	// and exact midpoints between f16 neighbours hit the rounding paths.
	for range 200000 {
		x := math.Float32frombits(rng.Uint32())
		if !math.IsNaN(float64(x)) {
			check(x)
		}
		check(float32(math.Ldexp(rng.Float64()*2-1, rng.IntN(46)-30)))
	}
	for i := 0; i+1 < len(ref.vals); i++ {
		mid := float32((ref.vals[i] + ref.vals[i+1]) / 2) // exact in float32
		check(mid)
		check(math.Nextafter32(mid, 0))
		check(math.Nextafter32(mid, 1))
		check(-mid)
	}
}

func TestBF16(t *testing.T) {
	cases := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80}, {-2, 0xc000}, {0, 0},
		{math.Float32frombits(0x3f808000), 0x3f80}, // tie, even stays
		{math.Float32frombits(0x3f818000), 0x3f82}, // tie, odd rounds up
		{math.Float32frombits(0x3f808001), 0x3f81}, // above the tie
		{math.Float32frombits(0x7f7fffff), 0x7f80}, // max float32 rounds to Inf
		{float32(math.Inf(-1)), 0xff80},
	}
	for _, c := range cases {
		if got := F32ToBF16(c.in); got != c.want {
			t.Errorf("F32ToBF16(%#08x) = %#04x, want %#04x", math.Float32bits(c.in), got, c.want)
		}
	}
	if got := F32ToBF16(math.Float32frombits(0x7f800001)); !math.IsNaN(float64(BF16ToF32(got))) {
		t.Errorf("F32ToBF16(NaN) = %#04x, not a NaN", got)
	}
	// Reference: the two bfloat16 neighbours of x are x truncated and the
	// next pattern up; compare distances in float64. Past the largest finite
	// value the next pattern is Inf, which IEEE rounding treats as 2^128
	// (the value an unbounded exponent would give).
	exact := func(h uint16) float64 {
		if h&0x7fff == 0x7f80 {
			return math.Copysign(math.Ldexp(1, 128), float64(BF16ToF32(h)))
		}
		return float64(BF16ToF32(h))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		b := rng.Uint32()
		x := math.Float32frombits(b)
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			continue
		}
		lo := uint16(b >> 16)
		hi := lo + 1
		dl := math.Abs(float64(x) - exact(lo))
		dh := math.Abs(exact(hi) - float64(x))
		want := lo
		if dh < dl || (dh == dl && lo&1 == 1) {
			want = hi
		}
		if got := F32ToBF16(x); got != want {
			t.Fatalf("F32ToBF16(%#08x) = %#04x, reference %#04x", b, got, want)
		}
		if BF16ToF32(lo) != math.Float32frombits(b&0xffff0000) {
			t.Fatalf("BF16ToF32(%#04x) is not the top half of a float32", lo)
		}
	}
}
