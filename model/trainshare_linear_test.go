package model

import (
	"math/rand/v2"
	"testing"
)

// TestHybridSharedPromptFiniteDifference checks the state-gradient path
// of a shared prompt (trainshare_linear.go) against finite differences:
// on the tiny Qwen3.5, one group of three rollouts with only the two
// children's rows scored, so what the prompt's rows contribute to the
// gradients reaches them only from the children's continuations — in the
// DeltaNet layers through the prompt's final conv and recurrent states
// (dState), summed over the children. Every DeltaNet adapter's A and B
// gradient agrees with a central difference of the shared forward's loss
// along itself within 1e-2 (checkAlongGradient's bound; its B shrunk as
// TestHybridLoRAGradientsFiniteDifference's, which says why). Dropping the
// state gradient moves these gradients by NMSE 0.4 to 1.2
// (TestSharedPrefixMatchesUnshared).
func TestHybridSharedPromptFiniteDifference(t *testing.T) {
	m := loadTiny(t, "qwen3_5-tiny")
	defer m.Free()
	be := m.Backend
	ad := newTestAdapter(m, 3, 5)
	m = m.WithAdapter(ad)
	for l := range ad.l {
		for _, lr := range ad.l[l] {
			if lr != nil {
				be.Scale(lr.B, 0.25, lr.B.Len())
			}
		}
	}
	rng := rand.New(rand.NewPCG(12, 13))
	b, rows, targets, shares := groupBatch(rng, m.Config.VocabSize, 1, 3, 9)
	var childRows, childTargets []int32
	for i, r := range rows {
		if b.Slots[r] != 0 { // slot 0 is the parent
			childRows, childTargets = append(childRows, r), append(childTargets, targets[i])
		}
	}
	for _, s := range shares {
		b.Share(s[0], s[1], s[2])
	}
	c := make([]float32, len(childRows))
	for i := range c {
		c[i] = float32(rng.NormFloat64())
	}
	loss := func() float64 {
		tr, err := m.ForwardTrain(b, childRows, childTargets)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Free()
		if tr.Len() >= b.Len() {
			t.Fatalf("the trace runs %d of the batch's %d tokens: the prompt is not shared", tr.Len(), b.Len())
		}
		lp := make([]float32, tr.Rows())
		be.Download(lp, tr.Logp)
		s := 0.0
		for i := range lp {
			s += float64(c[i]) * float64(lp[i])
		}
		return s
	}
	trainGrads(t, m, ad, b, childRows, childTargets, c)
	checked := 0
	for l := range ad.l {
		if m.W.Layers[l].Linear == nil {
			continue
		}
		for _, p := range deltaNetProjs {
			lr := ad.l[l][p]
			if lr == nil {
				continue
			}
			checkAlongGradientOf(t, be, loss, lr.A, lr.DA, l, p)
			checkAlongGradientOf(t, be, loss, lr.B, lr.DB, l, p)
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no DeltaNet adapter was checked")
	}
}

// TestHybridShareLayouts: groups whose shares the hybrid's single state
// hand-off must reconcile still give the log-probs and gradients of each
// sequence computed alone (eachAlone; log-probs within shareLayoutsLogp,
// gradients NMSE ≤ 1e-6, TestSharedPrefixMatchesUnshared's; the packed
// unshared batch is 1.3e-5 off the lone sequences at one row): a child that
// declares a shorter prefix than its sibling (the group then shares the
// shorter one: uniformPrompts), a child scored inside the prompt (its
// own rows from there, cutting the group's prompt), and a lone sequence
// between the groups, fresh in the continuations' call. The trace runs
// exactly the tokens the cut prompts leave.
// shareLayoutsLogp bounds TestHybridShareLayouts' log-probs: the shared
// and the lone sequences' DeltaNet runs are cut differently, so their f32
// sums differ by the sgemm's blocking: measured 0 with gonum, 8.6e-6 with
// OpenBLAS's Haswell kernels and 1.1e-5 with its AVX-512 ones (an AMD
// EPYC with OPENBLAS_CORETYPE unset), about 3× that here.
const shareLayoutsLogp = 3e-5

func TestHybridShareLayouts(t *testing.T) {
	m := loadTiny(t, "qwen3_5-tiny")
	defer m.Free()
	ad := newTestAdapter(m, 2, 9)
	m = m.WithAdapter(ad)
	rng := rand.New(rand.NewPCG(21, 22))
	vocab := m.Config.VocabSize
	var b Batch
	var rows, targets []int32
	// add appends a sequence of prompt then comp tokens in slot, scored
	// from position scoredFrom.
	add := func(slot int, prompt []int32, comp, scoredFrom int) {
		seq := append(append([]int32{}, prompt...), randomIDs(rng, comp, vocab)...)
		start := int32(b.Len())
		b.Add(slot, 0, seq[:len(seq)-1]...)
		for p := scoredFrom; p < len(seq)-1; p++ {
			rows, targets = append(rows, start+int32(p)), append(targets, seq[p+1])
		}
	}
	p1, p2 := randomIDs(rng, 7, vocab), randomIDs(rng, 6, vocab)
	add(0, p1, 4, 6)
	add(1, p1, 5, 6) // shares 7
	add(2, p1, 3, 6) // declares 5: the group shares 5
	add(3, randomIDs(rng, 8, vocab), 1, 2)
	add(4, p2, 3, 5)
	add(5, p2, 4, 3) // scored from position 3: the group shares 3
	add(6, p2, 2, 5)
	sb := b
	for _, s := range [][3]int{{1, 0, 7}, {2, 0, 5}, {5, 4, 6}, {6, 4, 6}} {
		sb.Share(s[0], s[1], s[2])
	}
	dlogp := make([]float32, len(rows))
	for i := range dlogp {
		dlogp[i] = float32(rng.NormFloat64())
	}
	tr, err := m.ForwardTrain(&sb, rows, targets)
	if err != nil {
		t.Fatal(err)
	}
	if want := b.Len() - 2*5 - 2*3; tr.Len() != want {
		t.Errorf("shared trace runs %d tokens, want %d", tr.Len(), want)
	}
	tr.Free()
	plain := eachAlone(t, m, ad, &b, rows, targets, dlogp)
	shared := trainGrads(t, m, ad, &sb, rows, targets, dlogp)
	if d := maxAbsDiff(plain.logp, shared.logp); d > shareLayoutsLogp {
		t.Errorf("log-probs: max |Δ| %g between the shared batch and each sequence alone, over %g", d, shareLayoutsLogp)
	}
	worst := 0.0
	for k := range plain.grads {
		d, e := maxAbsDiff(plain.grads[k], shared.grads[k]), nmse(shared.grads[k], plain.grads[k])
		if d > 1e-4*(1+maxAbs(plain.grads[k])) || e > 1e-6 {
			t.Errorf("gradient %d: max |Δ| %g (scale %g), NMSE %g between the shared batch and each sequence alone", k, d, maxAbs(plain.grads[k]), e)
		}
		worst = max(worst, e)
	}
	t.Logf("shared vs each sequence alone: log-probs max |Δ| %.3g; %d LoRA gradients, worst NMSE %.3g", maxAbsDiff(plain.logp, shared.logp), len(plain.grads), worst)
}

// eachAlone is trainGrads of each sequence of b run as a batch of its own:
// the log-probs of b's scored rows, and the gradients summed over the
// sequences.
func eachAlone(t *testing.T, m *Model, ad *testAdapter, b *Batch, rows, targets []int32, dlogp []float32) traced {
	t.Helper()
	out := traced{logp: make([]float32, len(rows))}
	done := map[int32]bool{}
	for _, s := range b.Slots {
		if done[s] {
			continue
		}
		done[s] = true
		var one Batch
		at := map[int32]int32{} // b's index → one's
		for i := range b.Len() {
			if b.Slots[i] == s {
				at[int32(i)] = int32(one.Len())
				one.Add(0, int(b.Positions[i]), b.Tokens[i])
			}
		}
		var r, tg []int32
		var d []float32
		var back []int
		for j, row := range rows {
			if i, ok := at[row]; ok {
				r, tg, d, back = append(r, i), append(tg, targets[j]), append(d, dlogp[j]), append(back, j)
			}
		}
		if len(r) == 0 {
			continue
		}
		got := trainGrads(t, m, ad, &one, r, tg, d)
		for k, j := range back {
			out.logp[j] = got.logp[k]
		}
		if out.grads == nil {
			out.grads = got.grads
			continue
		}
		for g := range got.grads {
			for e, v := range got.grads[g] {
				out.grads[g][e] += v
			}
		}
	}
	return out
}
