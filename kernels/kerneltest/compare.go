package kerneltest

import (
	"fmt"
	"math"
)

// Tol is an accuracy bound for one op's output against its float64
// reference.
type Tol struct {
	// NMSE bounds the normalised mean squared error Σ(got-want)² / Σwant².
	NMSE float64
	// MaxAbs bounds max|got-want| relative to the output's scale:
	// max|got-want| ≤ MaxAbs · max(1, max|want|). It catches a single bad
	// element that NMSE would average away in a large output.
	MaxAbs float64
}

// NMSE is the normalised mean squared error Σ(got-want)² / Σwant² (ggml's
// test-backend-ops metric). When want is all zeros it returns Σ(got-want)²,
// so an exact zero still compares as 0. NaN or Inf in got gives +Inf.
func NMSE(got []float32, want []float64) float64 {
	if len(got) != len(want) {
		panic(fmt.Sprintf("kerneltest.NMSE: len(got)=%d, len(want)=%d", len(got), len(want)))
	}
	var num, den float64
	for i, w := range want {
		g := float64(got[i])
		if math.IsNaN(g) || math.IsInf(g, 0) {
			return math.Inf(1)
		}
		d := g - w
		num += d * d
		den += w * w
	}
	if den == 0 {
		return num
	}
	return num / den
}

// MaxAbsErr returns max|got-want| and the index where it occurs (-1 when the
// slices are empty). NaN in got counts as an infinite error.
func MaxAbsErr(got []float32, want []float64) (float64, int) {
	worst, at := 0.0, -1
	for i, w := range want {
		d := math.Abs(float64(got[i]) - w)
		if math.IsNaN(d) {
			d = math.Inf(1)
		}
		if at < 0 || d > worst {
			worst, at = d, i
		}
	}
	return worst, at
}

// Compare checks got against the float64 reference want: every element of
// got must be finite, and NMSE and max-abs error must be within tol. The
// error names what, the failing metric and the worst element.
func Compare(what string, got []float32, want []float64, tol Tol) error {
	if len(got) != len(want) {
		return fmt.Errorf("%s: got %d values, want %d", what, len(got), len(want))
	}
	for i, g := range got {
		if math.IsNaN(float64(g)) || math.IsInf(float64(g), 0) {
			return fmt.Errorf("%s[%d] = %v (want %.8g): non-finite output", what, i, g, want[i])
		}
	}
	scale := 1.0
	for _, w := range want {
		scale = math.Max(scale, math.Abs(w))
	}
	worst, at := MaxAbsErr(got, want)
	if worst > tol.MaxAbs*scale {
		return fmt.Errorf("%s[%d] = %.8g, want %.8g: |err| %.3g > %.3g (MaxAbs %.1e × scale %.3g)",
			what, at, got[at], want[at], worst, tol.MaxAbs*scale, tol.MaxAbs, scale)
	}
	if e := NMSE(got, want); e > tol.NMSE {
		return fmt.Errorf("%s: NMSE %.3g > %.1e (worst element [%d] = %.8g, want %.8g)",
			what, e, tol.NMSE, at, got[at], want[at])
	}
	return nil
}

// sameFloat reports whether a and b are the same value, treating any two
// NaNs as equal (guards are NaN; a NaN's payload may change in transit).
func sameFloat(a, b float32) bool {
	if a != a && b != b {
		return true
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

// CompareBF16 checks got, values an op computed in f32 and stored rounded
// to bf16 (nearest-even), against the float64 reference want: each
// element must be the bf16 rounding of some value within tol of want
// (MaxAbs relative to the output's scale, as Compare) — so a value that
// lies near a rounding boundary may round either way, and nothing else
// is allowed. NaN or Inf fails.
func CompareBF16(what string, got []float32, want []float64, tol Tol) error {
	if len(got) != len(want) {
		return fmt.Errorf("%s: got %d values, want %d", what, len(got), len(want))
	}
	scale := 1.0
	for _, w := range want {
		scale = math.Max(scale, math.Abs(w))
	}
	eps := tol.MaxAbs * scale
	for i, g := range got {
		lo, hi := RoundBF16(float32(want[i]-eps)), RoundBF16(float32(want[i]+eps))
		if math.IsNaN(float64(g)) || math.IsInf(float64(g), 0) || g < lo || g > hi {
			return fmt.Errorf("%s[%d] = %.8g, want the bf16 rounding of %.8g ± %.3g, in [%.8g, %.8g]", what, i, g, want[i], eps, lo, hi)
		}
	}
	return nil
}
