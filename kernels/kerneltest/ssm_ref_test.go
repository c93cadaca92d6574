package kerneltest

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestRefSSDScanByHand(t *testing.T) {
	// One head of one channel and one state: A = −exp(0) = −1, dtRaw = 0
	// and dtBias = ln(e − 1) give dt = 1 and a = e⁻¹. From S₀ = 2 with
	// x = 3, B = 5, C = 7, D = 0.5: S = 2/e + 15, y = 7·S + 1.5.
	s := SSMShape{1, 1, 1, 1}
	st := []float64{2}
	y := RefSSDScan([]float64{3, 5, 7}, []float64{0}, []float64{0}, []float64{math.Log(math.E - 1)}, []float64{0.5}, st,
		[]LinearRun{{0, 1, 0, 0}}, 1, s)
	S := 2/math.E + 15
	near(t, "state", st, []float64{S})
	near(t, "y", y, []float64{7*S + 1.5})
}

func TestRefSSDScanBackwardMatchesFD(t *testing.T) {
	const nTok, slots = 9, 3
	s := SSMShape{4, 3, 2, 2}
	hs := s.NHeads * s.hs()
	rng := rand.New(rand.NewPCG(5, 6))
	xBC, dtRaw := uniform64(rng, nTok*s.width()), uniform64(rng, nTok*s.NHeads)
	aLog, dtBias, d := uniform64(rng, s.NHeads), uniform64(rng, s.NHeads), uniform64(rng, s.NHeads)
	st := uniform64(rng, slots*hs)
	dy, dFinal := uniform64(rng, nTok*s.NHeads*s.HeadDim), uniform64(rng, slots*hs)
	clear(dFinal[:hs]) // slot 0 is only read
	loss := func() float64 {
		sc := append([]float64(nil), st...)
		y := RefSSDScan(xBC, dtRaw, aLog, dtBias, d, sc, linearRefRuns, nTok, s)
		return dot64(dy, y) + dot64(dFinal[hs:], sc[hs:])
	}
	dst := append([]float64(nil), dFinal...)
	dx, ddt := RefSSDScanBackward(dst, dy, xBC, dtRaw, aLog, dtBias, d, st, linearRefRuns, nTok, s)
	fdCheck(t, "dxBC", xBC, dx, loss)
	fdCheck(t, "ddtRaw", dtRaw, ddt, loss)
	fdCheck(t, "dState[0]", st[:hs], dst[:hs], loss)
}

func TestRefGroupedGatedRMSNormByHand(t *testing.T) {
	// One row, two groups of two: z = 50 makes silu(z) = 50 up to 1e-20,
	// so u = 50·x; group (3, 4)·50 has rms 50·sqrt(12.5), group (1, 1)·50
	// has rms 50. With w = (1, 2, 3, 4) and eps 0:
	z := []float64{50, 50, 50, 50}
	out, _ := RefGroupedGatedRMSNorm([]float64{3, 4, 1, 1}, z, []float64{1, 2, 3, 4}, 1, 4, 2, 0)
	r := math.Sqrt(12.5)
	near(t, "out", out, []float64{3 / r, 8 / r, 3, 4})
}

func TestRefGroupedGatedRMSNormBackwardMatchesFD(t *testing.T) {
	const rows, dim, groups, eps = 3, 8, 2, 1e-5
	rng := rand.New(rand.NewPCG(7, 8))
	x, z, w, dy := uniform64(rng, rows*dim), uniform64(rng, rows*dim), uniform64(rng, dim), uniform64(rng, rows*dim)
	loss := func() float64 {
		out, _ := RefGroupedGatedRMSNorm(x, z, w, rows, dim, groups, eps)
		return dot64(dy, out)
	}
	_, rstd := RefGroupedGatedRMSNorm(x, z, w, rows, dim, groups, eps)
	dx, dz := RefGroupedGatedRMSNormBackward(dy, x, z, w, rstd, rows, dim, groups)
	fdCheck(t, "dx", x, dx, loss)
	fdCheck(t, "dz", z, dz, loss)
}
