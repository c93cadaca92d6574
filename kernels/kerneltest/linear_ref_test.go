package kerneltest

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The LinearOps references checked by hand and, for the backwards, against
// per-element float64 central differences of the forward references.

func TestRefCausalConv1DByHand(t *testing.T) {
	// One channel, kernel 3, weights (1, 2, 3); init state rows (10, 20).
	// Run of two tokens x = (1, 2): pre-activations
	// 1·10 + 2·20 + 3·1 = 53 and 1·20 + 2·1 + 3·2 = 28.
	st := []float64{10, 20, 0, 0}
	out := RefCausalConv1D([]float64{1, 2}, []float64{1, 2, 3}, nil, st, []LinearRun{{0, 2, 0, 1}}, 2, 1, 3)
	near(t, "out", out, []float64{refSilu(53), refSilu(28)})
	near(t, "final state", st, []float64{10, 20, 1, 2})
	// A run of one token keeps the init state's last row.
	st = []float64{10, 20, 0, 0}
	RefCausalConv1D([]float64{5}, []float64{1, 2, 3}, nil, st, []LinearRun{{0, 1, 0, 1}}, 1, 1, 3)
	near(t, "short run's final state", st, []float64{10, 20, 20, 5})
	// Mamba-2's bias joins before the SiLU: 53 − 3 and 28 − 3.
	st = []float64{10, 20, 0, 0}
	out = RefCausalConv1D([]float64{1, 2}, []float64{1, 2, 3}, []float64{-3}, st, []LinearRun{{0, 2, 0, 1}}, 2, 1, 3)
	near(t, "out with bias", out, []float64{refSilu(50), refSilu(25)})
}

func TestRefGatedDeltaRuleByHand(t *testing.T) {
	// dimK = dimV = 1: q̂ = k̂ = 1 (up to the 1e-6 in the norm), so with
	// S₀ = 2, g = ln ½, β = ½, v = 4: S' = 1, δ = ½(4 − 1) = 1.5,
	// S = 2.5 = out.
	s := DeltaShape{1, 1, 1, 1}
	st := []float64{2}
	n := 1 / math.Sqrt(1+1e-6)
	out := RefGatedDeltaRule([]float64{1, 1, 4}, []float64{math.Log(0.5)}, []float64{0.5}, st, []LinearRun{{0, 1, 0, 0}}, 1, s)
	sp := 1.0
	delta := 0.5 * (4 - n*sp)
	near(t, "state", st, []float64{sp + n*delta})
	near(t, "out", out, []float64{n * (sp + n*delta)})
}

// deltaInputs draws q, k, v (uniform), g in [−gMax, 0) and beta in (0, 1).
func deltaInputs(rng *rand.Rand, nTok int, s DeltaShape, gMax float64) (qkv, g, beta []float64) {
	qkv = make([]float64, nTok*s.width())
	for i := range qkv {
		qkv[i] = 2*rng.Float64() - 1
	}
	g, beta = make([]float64, nTok*s.NHeadV), make([]float64, nTok*s.NHeadV)
	for i := range g {
		g[i] = -gMax * (0.02 + 0.98*rng.Float64())
		beta[i] = 0.05 + 0.9*rng.Float64()
	}
	return qkv, g, beta
}

// TestChunkedMatchesRecurrence: the chunked form (float32, chunks of 64)
// equals the float64 recurrence within 1e-5 relative to the output's
// scale, at run lengths around the chunk boundary, for the outputs and
// the final state, with weak and strong decay.
func TestChunkedMatchesRecurrence(t *testing.T) {
	const dimK, dimV = 16, 24
	s := DeltaShape{1, 1, dimK, dimV}
	for _, n := range []int{1, 63, 64, 65, 200} {
		for _, gMax := range []float64{0.1, 3} {
			rng := rand.New(rand.NewPCG(uint64(n), 7))
			qkv, g, beta := deltaInputs(rng, n, s, gMax)
			st := make([]float64, dimK*dimV)
			for i := range st {
				st[i] = rng.Float64() - 0.5
			}
			S32 := f32s(st)
			want := RefGatedDeltaRule(qkv, g, beta, st, []LinearRun{{0, n, 0, 0}}, n, s)
			q, k, v := make([]float32, n*dimK), make([]float32, n*dimK), make([]float32, n*dimV)
			for tk := range n {
				tok := s.token(qkv, g, beta, tk, 0)
				copy(q[tk*dimK:], f32s(tok.q))
				copy(k[tk*dimK:], f32s(tok.k))
				copy(v[tk*dimV:], f32s(tok.v))
			}
			got := ChunkedGatedDelta(q, k, v, f32s(g), f32s(beta), S32, n, dimK, dimV)
			tol := Tol{NMSE: 1e-10, MaxAbs: 1e-5}
			if err := Compare("out", got, want, tol); err != nil {
				t.Errorf("n=%d, g down to −%g: %v", n, gMax, err)
			}
			if err := Compare("state", S32, st, tol); err != nil {
				t.Errorf("n=%d, g down to −%g: %v", n, gMax, err)
			}
			worst, _ := MaxAbsErr(got, want)
			t.Logf("n=%d, g down to −%g: out NMSE %.2g, max-abs %.2g", n, gMax, NMSE(got, want), worst)
		}
	}
}

// fdCheck compares grad with per-element central differences of f.
func fdCheck(t *testing.T, what string, x, grad []float64, f func() float64) {
	t.Helper()
	const h = 1e-6
	for i := range x {
		x0 := x[i]
		x[i] = x0 + h
		lp := f()
		x[i] = x0 - h
		lm := f()
		x[i] = x0
		fd := (lp - lm) / (2 * h)
		if math.Abs(fd-grad[i]) > 1e-6*math.Max(1, math.Abs(fd)) {
			t.Errorf("%s[%d] = %.10g, finite differences %.10g", what, i, grad[i], fd)
			return
		}
	}
}

func dot64(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func uniform64(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = 2*rng.Float64() - 1
	}
	return v
}

// linearRefRuns: a fresh run into slot 1, a run from slot 0 into slot 2,
// and a run from slot 0 into no slot (shares the init slot).
var linearRefRuns = []LinearRun{{0, 3, -1, 1}, {3, 4, 0, 2}, {7, 2, 0, -1}}

func TestRefCausalConv1DBackwardMatchesFD(t *testing.T) {
	const nTok, ch, kern, slots = 9, 3, 4, 3
	rng := rand.New(rand.NewPCG(1, 2))
	x, w, bias := uniform64(rng, nTok*ch), uniform64(rng, ch*kern), uniform64(rng, ch)
	st := uniform64(rng, slots*(kern-1)*ch)
	dout, dFinal := uniform64(rng, nTok*ch), uniform64(rng, slots*(kern-1)*ch)
	for i := range dFinal[:(kern-1)*ch] {
		dFinal[i] = 0 // slot 0 is only read
	}
	// L = dout·out + dFinal·(final states).
	loss := func() float64 {
		s := append([]float64(nil), st...)
		out := RefCausalConv1D(x, w, bias, s, linearRefRuns, nTok, ch, kern)
		return dot64(dout, out) + dot64(dFinal[(kern-1)*ch:], s[(kern-1)*ch:])
	}
	dst := append([]float64(nil), dFinal...)
	dx := RefCausalConv1DBackward(dst, dout, x, w, bias, st, linearRefRuns, nTok, ch, kern)
	fdCheck(t, "dx", x, dx, loss)
	dInit := make([]float64, len(st))
	copy(dInit, dst[:(kern-1)*ch]) // only slot 0 is an init slot
	fdCheck(t, "dConvState[0]", st[:(kern-1)*ch], dInit, loss)
}

func TestRefGatedDeltaRuleBackwardMatchesFD(t *testing.T) {
	const nTok, slots = 9, 3
	for _, s := range []DeltaShape{{1, 2, 3, 2}, {2, 2, 2, 3}} {
		rng := rand.New(rand.NewPCG(3, 4))
		qkv, g, beta := deltaInputs(rng, nTok, s, 1)
		hs := s.NHeadV * s.DimK * s.DimV
		st := uniform64(rng, slots*hs)
		dout, dFinal := uniform64(rng, nTok*s.NHeadV*s.DimV), uniform64(rng, slots*hs)
		for i := range dFinal[:hs] {
			dFinal[i] = 0
		}
		loss := func() float64 {
			sc := append([]float64(nil), st...)
			out := RefGatedDeltaRule(qkv, g, beta, sc, linearRefRuns, nTok, s)
			return dot64(dout, out) + dot64(dFinal[hs:], sc[hs:])
		}
		dst := append([]float64(nil), dFinal...)
		dqkv, dg, dbeta := RefGatedDeltaRuleBackward(dst, dout, qkv, g, beta, st, linearRefRuns, nTok, s)
		fdCheck(t, "dqkv", qkv, dqkv, loss)
		fdCheck(t, "dg", g, dg, loss)
		fdCheck(t, "dbeta", beta, dbeta, loss)
		fdCheck(t, "dState[0]", st[:hs], dst[:hs], loss)
	}
}

func TestRefGatesAndNormBackwardsMatchFD(t *testing.T) {
	const rows, heads = 3, 4
	rng := rand.New(rand.NewPCG(5, 6))
	a, b := uniform64(rng, rows*heads), uniform64(rng, rows*heads)
	a[0] = 25 // above softplus's threshold
	aLog, dt := uniform64(rng, heads), uniform64(rng, heads)
	dg, dbeta := uniform64(rng, rows*heads), uniform64(rng, rows*heads)
	gates := func() float64 {
		g, be := RefDeltaGates(a, b, aLog, dt, rows, heads)
		return dot64(dg, g) + dot64(dbeta, be)
	}
	da, db := RefDeltaGatesBackward(dg, dbeta, a, b, aLog, dt, rows, heads)
	fdCheck(t, "da", a, da, gates)
	fdCheck(t, "db", b, db, gates)

	const dim = 5
	x, z, w, dy := uniform64(rng, rows*dim), uniform64(rng, rows*dim), uniform64(rng, dim), uniform64(rng, rows*dim)
	norm := func() float64 {
		out, _ := RefGatedRMSNorm(x, z, w, rows, dim, 1e-6)
		return dot64(dy, out)
	}
	_, rstd := RefGatedRMSNorm(x, z, w, rows, dim, 1e-6)
	dx, dz := RefGatedRMSNormBackward(dy, x, z, w, rstd, rows, dim)
	fdCheck(t, "dx", x, dx, norm)
	fdCheck(t, "dz", z, dz, norm)
}
