package modeltest

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

// diff is the distance of got from want in the suite's two measures.
type diff struct {
	NMSE   float64 // Σ(got−want)² / Σwant²
	MaxAbs float64 // max|got−want| / max(1, max|want|)
}

// compare measures got against want; a NaN or Inf in got, or a length
// mismatch, gives +Inf in both.
func compare(got, want []float32) diff {
	if len(got) != len(want) {
		return diff{math.Inf(1), math.Inf(1)}
	}
	var num, den, worst, scale float64
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		if math.IsNaN(g) || math.IsInf(g, 0) {
			return diff{math.Inf(1), math.Inf(1)}
		}
		d := g - w
		num += d * d
		den += w * w
		worst = max(worst, math.Abs(d))
		scale = max(scale, math.Abs(w))
	}
	if den == 0 {
		den = 1
	}
	return diff{num / den, worst / max(1, scale)}
}

func (d diff) within(tol kerneltest.Tol) bool { return d.NMSE <= tol.NMSE && d.MaxAbs <= tol.MaxAbs }

func (d diff) String() string { return fmt.Sprintf("NMSE %.2g, max-abs %.2g", d.NMSE, d.MaxAbs) }

// worst keeps the largest diff seen and where.
type worst struct {
	d      diff
	where  string
	golden float64 // logits only: max |Δ| against PyTorch
	flips  int     // logits only: the most tokens routed differently in one run
}

func (w *worst) add(d diff, where string) {
	if w.where == "" || d.NMSE > w.d.NMSE || math.IsNaN(d.NMSE) {
		w.d.NMSE, w.where = d.NMSE, where
	}
	w.d.MaxAbs = max(w.d.MaxAbs, d.MaxAbs)
}

// maxAbsDiff is max|got−want| (the goldens' logit bar is absolute).
func maxAbsDiff(got, want []float32) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	m := 0.0
	for i := range want {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		if math.IsNaN(d) {
			return math.Inf(1)
		}
		m = max(m, d)
	}
	return m
}
