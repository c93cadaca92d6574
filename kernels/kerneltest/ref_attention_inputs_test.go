package kerneltest

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The references of the gated attention's ops, differentiated in float64
// along every coordinate (fdRef), independently of any backend.
func TestRefGatedAttentionBackwardsMatchFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))

	t.Run("SigmoidGate", func(t *testing.T) {
		x, gate, r := randVec(rng, 9, 2), randVec(rng, 9, 6), randVec(rng, 9, 1)
		dx, dg := RefSigmoidGateBackward(r, x, gate)
		fdRef(t, "dx", x, dx, func(x []float64) float64 { return dotRef(r, RefSigmoidGate(x, gate)) })
		fdRef(t, "dgate", gate, dg, func(g []float64) float64 { return dotRef(r, RefSigmoidGate(x, g)) })
	})

	// Gated q with a bias over both halves, q/k norm, GQA 2, RoPE on 4 of
	// 6 dims; two sequences, one continuing after a cached prefix.
	for _, gated := range []bool{true, false} {
		name := "AttentionInputs,rotaryDim=4"
		if gated {
			name += ",gated"
		}
		t.Run(name, func(t *testing.T) {
			nHead, nKV, hd, rot, maxLen := 2, 1, 6, 4, 4
			seq, pos := []int32{1, 1, 0}, []int32{0, 1, 3}
			n, pg := len(seq), IdentityPages(2, maxLen)
			qw, kd := nHead*hd, nKV*hd
			if gated {
				qw *= 2
			}
			qkv := randVec(rng, n*(qw+2*kd), 2)
			qb, kb, vb := randVec(rng, qw, 1), randVec(rng, kd, 1), randVec(rng, kd, 1)
			qn, kn := randVec(rng, hd, 2), randVec(rng, hd, 2)
			inv := []float32{1, 0.01}
			kc0, vc0 := randVec(rng, pg.Rows()*kd, 1), randVec(rng, pg.Rows()*kd, 1)
			rq, rk, rv := randVec(rng, n*nHead*hd, 1), randVec(rng, pg.Rows()*kd, 1), randVec(rng, pg.Rows()*kd, 1)
			var rg []float64
			if gated {
				rg = randVec(rng, n*nHead*hd, 1)
			}
			forward := func(qkv []float64) (q, g, kc, vc, qPre, kPre, rstdQ, rstdK []float64) {
				return RefAttentionInputs(qkv, kc0, vc0, qb, kb, vb, qn, kn, inv, seq, pos, pg, n, nHead, nKV, hd, rot, gated, 1e-6)
			}
			_, _, _, _, qPre, kPre, rstdQ, rstdK := forward(qkv)
			d := RefAttentionInputsBackward(rq, rg, rk, rv, qPre, kPre, rstdQ, rstdK, qn, kn, inv, seq, pos, pg, n, nHead, nKV, hd, rot)
			fdRef(t, "dqkv", qkv, d, func(x []float64) float64 {
				q, g, kc, vc, _, _, _, _ := forward(x)
				l := dotRef(rq, q) + dotRef(rk, kc) + dotRef(rv, vc)
				if gated {
					l += dotRef(rg, g)
				}
				return l
			})
		})
	}
}

// RefRoPEPartial by hand: with rotaryDim 4 of headDim 6, dim 0 pairs
// with dim 2 (not 3, as it would rotating the whole head), and dims 4
// and 5 pass exactly.
func TestRefRoPEPartialByHand(t *testing.T) {
	x := []float64{1, 2, 3, 4, 5, 6}
	inv := []float32{0.5, 0.25}
	out := RefRoPEPartial(x, []int32{2}, inv, 1, 1, 6, 4, false)
	s0, c0 := math.Sincos(1)   // 2·0.5
	s1, c1 := math.Sincos(0.5) // 2·0.25
	want := []float64{1*c0 - 3*s0, 2*c1 - 4*s1, 3*c0 + 1*s0, 4*c1 + 2*s1, 5, 6}
	for i := range want {
		if math.Abs(out[i]-want[i]) > 1e-15 {
			t.Errorf("out[%d] = %v, want %v", i, out[i], want[i])
		}
	}
}
