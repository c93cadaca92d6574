package kerneltest

import (
	"math"
	"testing"
)

// The references are the specification, so they are checked here against
// values worked out by hand, independently of any backend.

func near(t *testing.T, what string, got, want []float64) {
	t.Helper()
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Errorf("%s[%d] = %.15g, want %.15g", what, i, got[i], want[i])
		}
	}
}

func TestRefMatMulByHand(t *testing.T) {
	a := []float64{1, 2, 3, 4, 5, 6} // 2×3
	b := []float64{7, 8, 9, 10, 11, 12}
	c := []float64{1, 1, 1, 1}
	// A·B with B 3×2: [[58 64] [139 154]]
	near(t, "AB", RefMatMul(a, b, c, 2, 2, 3, false, false, 1, 0), []float64{58, 64, 139, 154})
	// A·Bᵀ with B stored 2×3: [[50 68] [122 167]]; alpha 2, beta −1.
	near(t, "2ABᵀ−C", RefMatMul(a, b, c, 2, 2, 3, false, true, 2, -1), []float64{99, 135, 243, 333})
	// Aᵀ (A stored 3×2 as [[1 2][3 4][5 6]]) times B 3×2: [[89 98] [116 128]]
	near(t, "AᵀB", RefMatMul(a, b, c, 2, 2, 3, true, false, 1, 0), []float64{89, 98, 116, 128})
	// beta = 0 ignores a NaN C.
	near(t, "NaN C", RefMatMul([]float64{2}, []float64{3}, []float64{math.NaN()}, 1, 1, 1, false, false, 1, 0), []float64{6})
}

func TestRefRMSNormByHand(t *testing.T) {
	out, rstd := RefRMSNorm([]float64{3, 4}, []float64{1, 2}, 1, 2, 0.5) // mean square 12.5, +eps 13
	r := 1 / math.Sqrt(13)
	near(t, "out", out, []float64{3 * r, 8 * r})
	near(t, "rstd", rstd, []float64{r})
}

func TestRefRoPEByHand(t *testing.T) {
	x := []float64{1, 0, 0, 1} // headDim 4: pairs (x0, x2) = (1, 0) and (x1, x3) = (0, 1)
	inv := []float32{float32(math.Pi / 2), 0}
	// Position 1 rotates pair 0 by 90°: (1, 0) → (0, 1); pair 1 has angle 0.
	near(t, "forward", RefRoPE(x, []int32{1}, inv, 1, 1, 4, false), []float64{math.Cos(float64(inv[0])), 0, math.Sin(float64(inv[0])), 1})
	near(t, "pos 0", RefRoPE(x, []int32{0}, inv, 1, 1, 4, false), x)
	near(t, "inverse", RefRoPE(x, []int32{1}, inv, 1, 1, 4, true), []float64{math.Cos(float64(inv[0])), 0, -math.Sin(float64(inv[0])), 1})
}

func TestRefAttentionByHand(t *testing.T) {
	// One slot, headDim 1, two positions with k = (0, ln 3 / scale... ):
	// scores s = (0, ln 3) give softmax (1/4, 3/4).
	k := []float64{0, math.Log(3)}
	v := []float64{10, 20}
	q := []float64{5, 1} // token 0 at pos 0, token 1 at pos 1
	out, lse := RefAttention(q, k, v, []int32{0, 0}, []int32{0, 1}, IdentityPages(1, 2), 2, 1, 1, 1, 1)
	// Token 0 sees only position 0: out = 10, lse = 5·0 = 0.
	// Token 1: s = (0, ln 3): out = 10/4 + 20·3/4 = 17.5, lse = ln 4.
	near(t, "out", out, []float64{10, 17.5})
	near(t, "lse", lse, []float64{0, math.Log(4)})
	// GQA: two query heads share KV head 0 (nHead 2, nKV 1).
	out, _ = RefAttention([]float64{1, 1}, k[:1], v[:1], []int32{0}, []int32{0}, IdentityPages(1, 1), 1, 2, 1, 1, 1)
	near(t, "gqa", out, []float64{10, 10})
	// Paged: blocks of one row, sequence 0's positions 0 and 1 in blocks 1
	// and 0 (reversed), so token 1 reads k = (0, ln 3) from rows 1, 0.
	pg := Pages{Table: []int32{1, 0}, BlockSize: 1, MaxBlocks: 2, NumBlocks: 2}
	out, _ = RefAttention(q, []float64{math.Log(3), 0}, []float64{20, 10}, []int32{0, 0}, []int32{0, 1}, pg, 2, 1, 1, 1, 1)
	near(t, "paged", out, []float64{10, 17.5})
}

func TestRefLogSoftmaxGatherByHand(t *testing.T) {
	logp, ent := RefLogSoftmaxGather([]float64{2, 2, 2, 2, 0, math.Log(3)}, []int32{1, 1}, 2, 3)
	// Row 0 (width 3: 2 2 2) is uniform: logp = −ln 3, entropy ln 3.
	// Row 1 (2 0 ln3): z = e² + 1 + 3.
	z := math.Exp(2) + 4
	p := []float64{math.Exp(2) / z, 1 / z, 3 / z}
	h := 0.0
	for _, pi := range p {
		h -= pi * math.Log(pi)
	}
	near(t, "logp", logp, []float64{-math.Log(3), -math.Log(z)})
	near(t, "entropy", ent, []float64{math.Log(3), h})
}

func TestRefSwiGLUByHand(t *testing.T) {
	near(t, "swiglu", RefSwiGLU([]float64{0, 2, -1000}, []float64{5, 3, 1}), []float64{0, 2 / (1 + math.Exp(-2)) * 3, 0})
}

func TestRoundBF16(t *testing.T) {
	for _, c := range [][2]float32{{1 + 1.0/256, 1}, {1 + 3.0/256, 1 + 2.0/128}, {-2.5, -2.5}, {65504, 65536}} {
		if got := RoundBF16(c[0]); got != c[1] {
			t.Errorf("RoundBF16(%v) = %v, want %v", c[0], got, c[1])
		}
	}
	if v := RoundBF16(float32(math.NaN())); v == v {
		t.Errorf("RoundBF16(NaN) = %v", v)
	}
}

func TestCompare(t *testing.T) {
	want := []float64{1, 2, 3}
	if e := NMSE([]float32{1, 2, 3}, want); e != 0 {
		t.Errorf("NMSE of an exact match = %v", e)
	}
	if e := NMSE([]float32{2, 2, 3}, want); math.Abs(e-1.0/14) > 1e-15 {
		t.Errorf("NMSE = %v, want 1/14", e)
	}
	if err := Compare("x", []float32{1, float32(math.NaN()), 3}, want, Tol{NMSE: 1, MaxAbs: 1}); err == nil {
		t.Error("Compare accepted NaN")
	}
	if err := Compare("x", []float32{1, 2, 3.01}, want, Tol{NMSE: 1, MaxAbs: 1e-3}); err == nil {
		t.Error("Compare accepted an error of 0.01 with MaxAbs 1e-3 × scale 3")
	}
	if err := Compare("x", []float32{1, 2, 3.001}, want, Tol{NMSE: 1e-6, MaxAbs: 1e-3}); err != nil {
		t.Errorf("Compare rejected an error within tolerance: %v", err)
	}
}

func TestRefAttentionVariantByHand(t *testing.T) {
	// The by-hand case above (s = (0, ln 3) for token 1) under variants.
	k := []float64{0, math.Log(3)}
	v := []float64{10, 20}
	q := []float64{5, 1}
	seq, pos, pg := []int32{0, 0}, []int32{0, 1}, IdentityPages(1, 2)
	// Window 1: each token sees itself only: out = v_pos, lse = its score.
	out, lse := RefAttentionVariant(q, k, v, seq, pos, pg, 2, 1, 1, 1, 1, RefVariant{Window: 1})
	near(t, "window1 out", out, []float64{10, 20})
	near(t, "window1 lse", lse, []float64{0, math.Log(3)})
	// Window 2 covers both positions: the plain result.
	out, _ = RefAttentionVariant(q, k, v, seq, pos, pg, 2, 1, 1, 1, 1, RefVariant{Window: 2})
	near(t, "window2", out, []float64{10, 17.5})
	// A sink of ln 4 (unscaled) beside token 1's e^0 + e^{ln 3} = 4: half
	// the mass goes to the sink: out = 17.5/2, lse = ln 8. Token 0: e^0 +
	// 4 = 5: out = 10/5, lse = ln 5.
	out, lse = RefAttentionVariant(q, k, v, seq, pos, pg, 2, 1, 1, 1, 1, RefVariant{Sinks: []float64{math.Log(4)}})
	near(t, "sink out", out, []float64{2, 8.75})
	near(t, "sink lse", lse, []float64{math.Log(5), math.Log(8)})
	// Sink and window 1: token 1 sees e^{ln 3} and the sink's 4: out = 20·3/7.
	out, _ = RefAttentionVariant(q, k, v, seq, pos, pg, 2, 1, 1, 1, 1, RefVariant{Window: 1, Sinks: []float64{math.Log(4)}})
	near(t, "sink+window", out, []float64{2, 20 * 3.0 / 7})
}
