package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// The C kernels' own tests: the vector exp against float64 math.Exp, and
// every kernel at lengths around each vector width (1, 7, 9, 17, 1023, …)
// against a float64 evaluation of the same formula, element by element,
// with the elements past the end left untouched. The conformance suite
// (cpu_test.go) then runs all of them through the Backend on every
// instruction set.

// ulpErr is |got − want| in float32 ulps of want (the spacing of float32
// numbers at |want|; 2⁻¹⁴⁹ for subnormal results).
func ulpErr(got float32, want float64) float64 {
	a := math.Abs(want)
	ulp := 0x1p-149
	if a >= 0x1p-126 {
		_, e := math.Frexp(a) // a = f·2^e, f ∈ [0.5, 1)
		ulp = math.Ldexp(1, e-24)
	}
	return math.Abs(float64(got)-want) / ulp
}

func TestVecExpMatchesMathExp(t *testing.T) {
	isas := vecISAs()
	if len(isas) == 0 {
		t.Skip("no C kernels in a CGO_ENABLED=0 build")
	}
	// Every 127th float32 in [−104, 89] (~17M values), every float32
	// within 4096 ulps of the edges (overflow at 88.72284, subnormal
	// results below −87.33654, zero below −103.97208), and specials.
	var xs []float32
	add := func(lo, hi float32) {
		for x := lo; x <= hi; x = math.Nextafter32(x, hi+1) {
			xs = append(xs, x)
		}
	}
	for b := math.Float32bits(89); b > 0; b -= min(b, 127) {
		xs = append(xs, math.Float32frombits(b), -math.Float32frombits(b))
	}
	for b := math.Float32bits(104); b > math.Float32bits(89); b -= 127 {
		xs = append(xs, -math.Float32frombits(b))
	}
	for _, edge := range []float32{88.72284, -87.33654, -103.97208, 0} {
		lo, hi := edge, edge
		for range 4096 {
			lo, hi = math.Nextafter32(lo, -200), math.Nextafter32(hi, 200)
		}
		add(lo, hi)
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	specials := []float32{nan, inf, -inf, 0, float32(math.Copysign(0, -1)), 89.5, -104.5, 1e30, -1e30, math.MaxFloat32, -math.MaxFloat32}
	xs = append(xs, specials...)
	for _, isa := range isas {
		v := vecLoad(isa, 0)
		got := make([]float32, len(xs))
		v.exp(got, xs)
		worst, at, worstSub, atSub := 0.0, float32(0), 0.0, float32(0)
		for i, x := range xs {
			want := math.Exp(float64(x))
			if x != x {
				if g := got[i]; g == g {
					t.Errorf("%s: exp(NaN) = %v", isa, g)
				}
				continue
			}
			if w32 := float32(want); math.IsInf(float64(w32), 0) || w32 == 0 {
				if got[i] != w32 {
					t.Errorf("%s: exp(%v) = %v, want %v", isa, x, got[i], w32)
				}
				continue
			}
			e := ulpErr(got[i], want)
			if want < 0x1p-126 {
				if e > worstSub {
					worstSub, atSub = e, x
				}
			} else if e > worst {
				worst, at = e, x
			}
		}
		t.Logf("%s: %d values, max error %.3f ulp (at %v), subnormal results %.3f × 2⁻¹⁴⁹ (at %v)", isa, len(xs), worst, at, worstSub, atSub)
		if worst > 1 {
			t.Errorf("%s: exp error %.3f ulp at %v, want ≤ 1 ulp", isa, worst, at)
		}
		if worstSub > 1 {
			t.Errorf("%s: exp of %v is %.3f subnormal ulps off, want ≤ 1", isa, atSub, worstSub)
		}
	}
}

// The sampler's float64 exp: within 2 ulp of math.Exp over x ≤ 0 (the
// sampler's range: x − max, scaled by 1/T) and beyond, with the edges.
func TestVecExpdMatchesMathExp(t *testing.T) {
	isas := vecISAs()
	if len(isas) == 0 {
		t.Skip("no C kernels in a CGO_ENABLED=0 build")
	}
	var xs []float64
	for i := 0; i <= 2_000_000; i++ {
		xs = append(xs, -745*float64(i)/2_000_000, 709*float64(i)/2_000_000)
	}
	for i := range 2000 {
		xs = append(xs, -708.3964185322641-1e-12*float64(i), 709.782712893384+1e-13*float64(i-1000), 1e-18*float64(i-1000))
	}
	inf := math.Inf(1)
	xs = append(xs, math.NaN(), inf, -inf, -745.2, -746, -1e300, 710, 1e300)
	for _, isa := range isas {
		got := make([]float64, len(xs))
		vecLoad(isa, 0).expd(got, xs)
		worst, at := 0.0, 0.0
		for i, x := range xs {
			want := math.Exp(x)
			switch {
			case math.IsNaN(x):
				if !math.IsNaN(got[i]) {
					t.Errorf("%s: expd(NaN) = %v", isa, got[i])
				}
			case math.IsInf(want, 1) && x <= 709.782712893384:
				// math.Exp on amd64 overflows up to 1e-10 early; e^x is
				// finite up to ln(MaxFloat64) = 709.782712893384 (math's
				// Overflow), and MaxFloat64·e^(x−ln MaxFloat64) is e^x to
				// ~1e-13 (the reduction's rounding).
				if ref := math.MaxFloat64 * math.Exp(x-709.782712893383973096); !(math.Abs(got[i]-ref) <= 1e-12*ref) {
					t.Errorf("%s: expd(%v) = %v, want %v", isa, x, got[i], ref)
				}
			case want == 0 || math.IsInf(want, 0) || want < 0x1p-1022:
				// e^x underflows or overflows: 0, +Inf, or a subnormal
				// within one unit of its last place.
				if d := math.Abs(got[i] - want); d > 0x1p-1074 && !(got[i] == want) {
					t.Errorf("%s: expd(%v) = %v, want %v", isa, x, got[i], want)
				}
			default:
				_, e := math.Frexp(want)
				if u := math.Abs(got[i]-want) / math.Ldexp(1, e-53); u > worst {
					worst, at = u, x
				}
			}
		}
		t.Logf("%s: %d values, max error %.3f ulp (at %v)", isa, len(xs), worst, at)
		if worst > 2 {
			t.Errorf("%s: expd error %.3f ulp at %v, want ≤ 2", isa, worst, at)
		}
	}
}

// vecLengths straddle every vector width (4, 8, 16 lanes) and its
// multiples, with long odd lengths for the tail after many full vectors.
var vecLengths = []int{1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 1023, 1024, 1025}

// guarded returns a slice of n values from gen, with 16 NaN sentinels
// past its end (in its capacity), and a check that they are untouched.
func guarded(n int, gen func(i int) float32) ([]float32, func() error) {
	s := make([]float32, n+16)
	for i := range s {
		if i < n {
			s[i] = gen(i)
		} else {
			s[i] = float32(math.NaN())
		}
	}
	return s[:n], func() error {
		for i, v := range s[n:] {
			if v == v {
				return fmt.Errorf("wrote %v at n+%d", v, i)
			}
		}
		return nil
	}
}

// within reports an element of got off its float64 value want(i) by more
// than rel·|want(i)|.
func within(what string, got []float32, want func(i int) float64, rel float64) error {
	return withinOf(what, got, func(i int) (float64, float64) { w := want(i); return w, math.Abs(w) }, rel)
}

// withinOf is within for a result that may cancel: want returns the value
// and the magnitude the error is relative to.
func withinOf(what string, got []float32, want func(i int) (float64, float64), rel float64) error {
	for i, g := range got {
		w, mag := want(i)
		if d := math.Abs(float64(g) - w); !(d <= rel*mag) {
			return fmt.Errorf("%s[%d] = %v, want %v (|err| %.3g > %.3g)", what, i, g, w, d, rel*mag)
		}
	}
	return nil
}

func sigmoid(g float64) float64 { return 1 / (1 + math.Exp(-g)) }

func TestVecKernelsAtEveryLength(t *testing.T) {
	isas := vecISAs()
	if len(isas) == 0 {
		t.Skip("no C kernels in a CGO_ENABLED=0 build")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	uni := func(s float64) func(int) float32 {
		return func(int) float32 { return float32((2*rng.Float64() - 1) * s) }
	}
	const rel = 8 * 0x1p-24 // a few float32 roundings
	for _, isa := range isas {
		v := vecLoad(isa, 0)
		for _, n := range vecLengths {
			t.Run(fmt.Sprintf("%s/n=%d", isa, n), func(t *testing.T) {
				g, _ := guarded(n, uni(12))
				u, _ := guarded(n, uni(3))
				dy, _ := guarded(n, uni(2))
				var errs []error
				out, okOut := guarded(n, uni(1))
				v.swiGLU(out, g, u)
				errs = append(errs, okOut(), within("SwiGLU", out, func(i int) float64 {
					return float64(g[i]) * sigmoid(float64(g[i])) * float64(u[i])
				}, rel))

				dg, okG := guarded(n, uni(1))
				du, okU := guarded(n, uni(1))
				v.swiGLUBackward(dg, du, dy, g, u)
				// 1 + g·(1−σ) cancels near g ≈ −1.28: the error is
				// relative to its terms there, not to the result.
				errs = append(errs, okG(), okU(), withinOf("dgate", dg, func(i int) (float64, float64) {
					gi, s := float64(g[i]), sigmoid(float64(g[i]))
					a := float64(dy[i]) * float64(u[i]) * s
					return a * (1 + gi*(1-s)), math.Abs(a) * (1 + math.Abs(gi)*(1-s))
				}, rel), within("dup", du, func(i int) float64 {
					return float64(dy[i]) * float64(g[i]) * sigmoid(float64(g[i]))
				}, rel))

				ex, okE := guarded(n, uni(1))
				v.exp(ex, g)
				errs = append(errs, okE(), within("exp", ex, func(i int) float64 { return math.Exp(float64(g[i])) }, 0x1p-23))

				sum, okS := guarded(n, uni(1))
				v.add(sum, g, u)
				errs = append(errs, okS(), within("Add", sum, func(i int) float64 { return float64(g[i] + u[i]) }, 0))

				mx, z, zx := v.lseStats(g)
				wm := float32(math.Inf(-1))
				for _, x := range g {
					wm = max(wm, x)
				}
				var wz, wzx float64
				for _, x := range g {
					d := float64(x - wm)
					wz += math.Exp(d)
					wzx += math.Exp(d) * d
				}
				if mx != wm || math.Abs(z-wz) > 1e-7*wz || math.Abs(zx-wzx) > 1e-6*(math.Abs(wzx)+wz) {
					errs = append(errs, fmt.Errorf("lseStats = %v, %v, %v, want %v, %v, %v", mx, z, zx, wm, wz, wzx))
				}
				es, okX := guarded(n, uni(1))
				v.expScale(es, g, wm, -0.5)
				errs = append(errs, okX(), within("expScale", es, func(i int) float64 { return -0.5 * math.Exp(float64(g[i]-wm)) }, 0x1p-22))

				row, okR := guarded(n, func(i int) float32 { return g[i] })
				smx, ssum := v.softmaxRow(row)
				errs = append(errs, okR(), within("softmaxRow", row, func(i int) float64 { return math.Exp(float64(g[i] - wm)) }, 0x1p-23))
				if smx != wm || math.Abs(ssum-wz) > 1e-7*wz {
					errs = append(errs, fmt.Errorf("softmaxRow returned %v, %v, want %v, %v", smx, ssum, wm, wz))
				}

				below, okB := guarded(n, func(i int) float32 { return g[i] })
				v.expBelow(below, 3)
				errs = append(errs, okB(), within("expBelow", below, func(i int) float64 {
					return math.Exp(float64(float32(min(float64(g[i])-3, 0))))
				}, 0x1p-23))

				p, okP := guarded(n, uni(1))
				m, okM := guarded(n, uni(0.1))
				s, okV := guarded(n, func(int) float32 { return float32(rng.Float64() * 0.01) })
				p0, m0, s0 := append([]float32(nil), p...), append([]float32(nil), m...), append([]float32(nil), s...)
				const b1, b2, c1, c2, lr, wd, eps = 0.9, 0.999, 0.19, 0.002, 1e-3, 0.01, 1e-8
				v.adamW(p, u, m, s, b1, b2, c1, c2, lr, wd, eps)
				errs = append(errs, okP(), okM(), okV(), within("AdamW m", m, func(i int) float64 {
					return b1*float64(m0[i]) + (1-b1)*float64(u[i])
				}, 0x1p-24), within("AdamW v", s, func(i int) float64 {
					return b2*float64(s0[i]) + (1-b2)*float64(u[i])*float64(u[i])
				}, 0x1p-24), within("AdamW param", p, func(i int) float64 {
					mi := b1*float64(m0[i]) + (1-b1)*float64(u[i])
					vi := b2*float64(s0[i]) + (1-b2)*float64(u[i])*float64(u[i])
					return float64(p0[i])*(1-lr*wd) - lr*(mi/c1)/(math.Sqrt(vi/c2)+eps)
				}, 0x1p-24))
				for _, err := range errs {
					if err != nil {
						t.Error(err)
					}
				}
			})
		}
	}
}
