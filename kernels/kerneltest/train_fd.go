package kerneltest

import (
	"fmt"
	"math"
)

// Finite-difference checks of a backward op against the backend's own
// forward op. The backend has no float64, so the check works along random
// directions rather than per element: with L(x) = Σ r ⊙ forward(x) for a
// fixed random r (the dy given to the backward), and a Gaussian direction
// e, the backward's dx must satisfy
//
//	dx · (x₊ − x₋) ≈ L(x₊) − L(x₋),   x± = float32(x ± h·e),
//
// where using the displacement actually stored (x₊ − x₋, not 2h·e)
// removes the float32 rounding of the perturbed inputs from the
// comparison. L is summed in float64 from the downloaded float32 outputs.

// fdRel is the tolerance of a finite-difference check, relative to the
// larger of |dx·Δ| and its typical size ‖dx ⊙ Δ‖₂ (the latter keeps a
// direction whose projection happens to cancel from demanding an absolute
// precision float32 cannot give). Central differences with h = 1e-2 have
// truncation error ~h² relative, and the forward's float32 rounding adds
// ~1e-7·Σ|r ⊙ y| to each L; 1e-2 leaves a margin of well over 10× on the
// CPU backend, while a gradient off by a factor, a sign or a missing term
// is off by far more.
const fdRel = 1e-2

// fdNoise bounds the float32 rounding of one evaluation of L relative to
// Σ|r ⊙ y|, the sum of the magnitudes of its terms.
const fdNoise = 1e-6

// fdDirs is the number of random directions per differentiated input.
const fdDirs = 3

// fdInput is one differentiated input of a forward op.
type fdInput struct {
	op   *operand  // the operand the forward reads; perturbed in place
	x    []float32 // its value at the point where grad was taken
	grad []float32 // the backward's gradient with respect to it at x
	// frozen, if set, marks elements that must not be perturbed (cache
	// positions that hold NaN because no token may read them).
	frozen func(i int) bool
}

// checkFD compares each input's grad with central differences of loss
// along fdDirs random directions of step h. loss runs the forward on the
// operands' current contents and returns L and Σ|terms of L|. The inputs
// are restored afterwards.
func checkFD(e *env, h float64, ins []fdInput, loss func() (l, labs float64, err error)) error {
	for _, in := range ins {
		n := len(in.x)
		xp, xm := make([]float32, n), make([]float32, n)
		for d := 0; d < fdDirs; d++ {
			for i, x := range in.x {
				xp[i], xm[i] = x, x
				if in.frozen != nil && in.frozen(i) {
					continue
				}
				step := h * e.rng.NormFloat64()
				xp[i] = float32(float64(x) + step)
				xm[i] = float32(float64(x) - step)
			}
			e.b.Upload(in.op.view, xp)
			lp, ap, err := loss()
			if err != nil {
				return err
			}
			e.b.Upload(in.op.view, xm)
			lm, am, err := loss()
			if err != nil {
				return err
			}
			e.b.Upload(in.op.view, in.x)
			an, typ := 0.0, 0.0
			for i, g := range in.grad {
				if in.frozen != nil && in.frozen(i) {
					continue
				}
				c := float64(g) * (float64(xp[i]) - float64(xm[i]))
				an += c
				typ += c * c
			}
			typ = math.Sqrt(typ)
			fd := lp - lm
			tol := fdRel*math.Max(math.Abs(an), typ) + fdNoise*(ap+am)
			if !(math.Abs(an-fd) <= tol) { // also true when either is NaN
				return fmt.Errorf("d%s·Δ = %.6g along direction %d, but L(x₊) − L(x₋) = %.6g: |diff| %.3g > %.3g (%.0e of max(|d%s·Δ|, ‖d%s⊙Δ‖ = %.3g) + %.0e·Σ|terms|)",
					in.op.name, an, d, fd, math.Abs(an-fd), tol, fdRel, in.op.name, in.op.name, typ, fdNoise)
			}
		}
	}
	return nil
}

// dotLoss returns Σ r·y and Σ|r·y| for downloaded forward outputs y.
func dotLoss(r, y []float32) (l, labs float64) {
	for i := range r {
		c := float64(r[i]) * float64(y[i])
		l += c
		labs += math.Abs(c)
	}
	return l, labs
}
