package cpu

import (
	"math"
	"testing"
)

func TestExpNonPosMatchesMathExp(t *testing.T) {
	worst, at := 0.0, 0.0
	for i := 0; i <= 200_000; i++ {
		x := -708 * float64(i) / 200_000
		got, want := expNonPos(x), math.Exp(x)
		if rel := math.Abs(got-want) / want; rel > worst {
			worst, at = rel, x
		}
	}
	if worst > 1e-9 {
		t.Errorf("expNonPos: relative error %.3g at x = %v, want ≤ 1e-9", worst, at)
	}
	for _, x := range []float64{-709, -1e300, math.Inf(-1)} {
		if got := expNonPos(x); got != 0 {
			t.Errorf("expNonPos(%v) = %v, want 0", x, got)
		}
	}
	if got := expNonPos(0); got != 1 {
		t.Errorf("expNonPos(0) = %v, want 1", got)
	}
}

func BenchmarkExp(b *testing.B) {
	xs, ys := make([]float64, 4096), make([]float64, 4096)
	for i := range xs {
		xs[i] = -float64(i) * 0.01
	}
	b.Run("math.Exp", func(b *testing.B) {
		for b.Loop() {
			for i, x := range xs {
				ys[i] = math.Exp(x)
			}
		}
	})
	b.Run("expNonPos", func(b *testing.B) {
		for b.Loop() {
			for i, x := range xs {
				ys[i] = expNonPos(x)
			}
		}
	})
}
