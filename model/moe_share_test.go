package model

import (
	"math/rand/v2"
	"testing"
)

// TestSharedPrefixReplayMatchesUnshared: routing replay under prompt
// sharing (Batch.Share). The reduced batch replays its kept tokens'
// records, so a training forward and backward of groups that share their
// prompts gives the log-probs, every LoRA gradient (attention, experts,
// routers) and the routing-mismatch fraction of the unshared batch — with
// the recorded routing and with an arbitrary one, which only a replay
// reproduces. A child's record that differs from the parent's at a shared
// position is not replayed (the parent's row is what runs) and counts as
// mismatched. Qwen3-MoE, and the hybrid Qwen3.5-MoE, whose DeltaNet
// layers hand a shared prompt on as their states (trainshare_linear.go).
func TestSharedPrefixReplayMatchesUnshared(t *testing.T) {
	for _, name := range []string{"qwen3-moe-tiny-dense", "qwen3_5-moe-tiny"} {
		t.Run(name, func(t *testing.T) { sharedPrefixReplayMatchesUnshared(t, name) })
	}
}

func sharedPrefixReplayMatchesUnshared(t *testing.T, name string) {
	m := loadTiny(t, name)
	defer m.Free()
	ad := newMoETestAdapter(m, 2, 9)
	m = m.WithAdapter(ad)
	c := m.Config
	rng := rand.New(rand.NewPCG(5, 6))
	const promptLen = 9
	b, rows, targets, shares := groupBatch(rng, c.VocabSize, 2, 3, promptLen)
	dlogp := make([]float32, len(rows))
	for i := range dlogp {
		dlogp[i] = float32(rng.NormFloat64())
	}
	// Each sequence's first token in the batch, for the shared positions.
	start := map[int32]int{}
	for i := b.Len() - 1; i >= 0; i-- {
		start[b.Slots[i]] = i
	}
	per, k := c.RoutingLen(1), c.NumExpertsPerTok
	// arbitrary is k distinct random experts per token and sparse layer,
	// the children's shared positions copied from their parent's, as the
	// sampler records them.
	arbitrary := make([]int32, c.RoutingLen(b.Len()))
	for i := range b.Len() {
		for s := range c.SparseLayers() {
			for j, e := range rng.Perm(c.NumExperts)[:k] {
				arbitrary[i*per+s*k+j] = int32(e)
			}
		}
	}
	for _, sh := range shares {
		ci, pi := start[int32(sh[0])], start[int32(sh[1])]
		copy(arbitrary[ci*per:(ci+promptLen)*per], arbitrary[pi*per:(pi+promptLen)*per])
	}
	run := func(experts []int32, share bool) moeTraced {
		rb := *b
		rb.Experts = experts
		if share {
			for _, s := range shares {
				rb.Share(s[0], s[1], s[2])
			}
		}
		return moeTrainGrads(t, m, ad, &rb, rows, targets, dlogp, 0)
	}
	same := func(what string, a, b moeTraced) {
		t.Helper()
		for i := range rows {
			if d := a.logp[i] - b.logp[i]; d > 1e-5 || d < -1e-5 {
				t.Errorf("%s: row %d: log-prob %g shared, %g unshared", what, rows[i], a.logp[i], b.logp[i])
			}
		}
		// The bounds of TestSharedPrefixMatchesUnshared, which says why.
		worst := 0.0
		for g := range a.grads {
			d, e := maxAbsDiff(a.grads[g], b.grads[g]), nmse(a.grads[g], b.grads[g])
			if d > 1e-4*(1+maxAbs(b.grads[g])) || e > 1e-6 {
				t.Errorf("%s: gradient %d: max |Δ| %g, NMSE %g between shared and unshared prompts", what, g, d, e)
			}
			worst = max(worst, e)
		}
		t.Logf("%s: log-probs max |Δ| %.3g; %d gradients, worst NMSE %.3g", what, maxAbsDiff(a.logp, b.logp), len(a.grads), worst)
	}
	recorded := record(t, m, b)
	natural := run(nil, false)
	for _, tc := range []struct {
		name    string
		experts []int32
	}{{"recorded", recorded}, {"arbitrary", arbitrary}} {
		plain, shared := run(tc.experts, false), run(tc.experts, true)
		same(tc.name, shared, plain)
		if shared.mismatch != plain.mismatch {
			t.Errorf("%s: routing mismatch %g shared, %g unshared", tc.name, shared.mismatch, plain.mismatch)
		}
		if tc.name == "recorded" && plain.mismatch != 0 {
			t.Errorf("replaying the model's own routing: mismatch %g, want 0", plain.mismatch)
		}
		if tc.name == "arbitrary" && (maxAbsDiff(plain.logp, natural.logp) < 1e-3 || plain.mismatch == 0) {
			t.Fatalf("the arbitrary routing changes nothing (log-probs within %g, mismatch %g): it tests no replay", maxAbsDiff(plain.logp, natural.logp), plain.mismatch)
		}
	}
	// One child's record of a shared position differs from its parent's:
	// the shared forward replays the parent's there (the same result as
	// the records agreeing) and counts the token as mismatched.
	ci := start[int32(shares[0][0])] + 2
	differs := append([]int32(nil), recorded...)
	for j := range k {
		differs[ci*per+j] = int32((int(recorded[ci*per+j]) + k) % c.NumExperts) // another set in the first sparse layer
	}
	base, got := run(recorded, true), run(differs, true)
	same("differing child record", got, base)
	if want := 1 / float64(b.Len()); got.mismatch < want*0.999 || got.mismatch > want*1.001 {
		t.Errorf("a child's differing record of a shared position: mismatch %g, want %g (1 of %d tokens)", got.mismatch, want, b.Len())
	}
}
