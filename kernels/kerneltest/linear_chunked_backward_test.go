package kerneltest

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestChunkedBackwardMatchesReference: the chunked form's backward
// (float32) equals the float64 reference backward of the recurrence
// within tolDelta, at run lengths around the chunk boundary, weak and
// strong decay, with an initial state and a final-state gradient.
func TestChunkedBackwardMatchesReference(t *testing.T) {
	const dimK, dimV = 16, 24
	s := DeltaShape{1, 1, dimK, dimV}
	hs := dimK * dimV
	for _, n := range []int{1, 63, 64, 65, 200} {
		for _, gMax := range []float64{0.1, 3} {
			rng := rand.New(rand.NewPCG(uint64(n), 11))
			qkv, g, beta := deltaInputs(rng, n, s, gMax)
			st := append(uniform64(rng, hs), make([]float64, hs)...) // slot 0: init; slot 1: final
			dout := uniform64(rng, n*dimV)
			dState := append(make([]float64, hs), uniform64(rng, hs)...)
			wantD := append([]float64(nil), dState...)
			wq, wg, wb := RefGatedDeltaRuleBackward(wantD, dout, qkv, g, beta, st, []LinearRun{{0, n, 0, 1}}, n, s)

			q, k, v := make([]float32, n*dimK), make([]float32, n*dimK), make([]float32, n*dimV)
			for tk := range n {
				tok := s.token(qkv, g, beta, tk, 0)
				copy(q[tk*dimK:], f32s(tok.q))
				copy(k[tk*dimK:], f32s(tok.k))
				copy(v[tk*dimV:], f32s(tok.v))
			}
			dq, dk, dv, dg, db, dS := ChunkedGatedDeltaBackward(q, k, v, f32s(g), f32s(beta), f32s(st[:hs]), f32s(dout), f32s(dState[hs:]), n, dimK, dimV)
			// Through the l2 norms in float64, as the reference does.
			W := s.width()
			got := make([]float32, n*W)
			for tk := range n {
				row := qkv[tk*W : (tk+1)*W]
				copy(got[tk*W:], f32s(l2Backward(row[:dimK], f64s(dq[tk*dimK:(tk+1)*dimK]), 1/math.Sqrt(dimK))))
				copy(got[tk*W+dimK:], f32s(l2Backward(row[dimK:2*dimK], f64s(dk[tk*dimK:(tk+1)*dimK]), 1)))
				copy(got[tk*W+2*dimK:], dv[tk*dimV:(tk+1)*dimV])
			}
			for _, c := range []struct {
				what string
				got  []float32
				want []float64
			}{{"dqkv", got, wq}, {"dg", dg, wg}, {"dbeta", db, wb}, {"dState", dS, wantD[:hs]}} {
				if err := Compare(c.what, c.got, c.want, tolDelta); err != nil {
					t.Errorf("n=%d, g down to −%g: %v", n, gMax, err)
				}
			}
			worst, _ := MaxAbsErr(got, wq)
			t.Logf("n=%d, g down to −%g: dqkv NMSE %.2g, max-abs %.2g; dg NMSE %.2g", n, gMax, NMSE(got, wq), worst, NMSE(dg, wg))
		}
	}
}

func f64s(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}
