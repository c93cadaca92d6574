package modeltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
)

// checkLogits compares the logits of the model in dir on be with the CPU
// backend's and, when withGolden, with the PyTorch golden testdata/golden/
// <golden>.json (whose token sequences are used either way), three ways: each golden sequence as one prefill,
// token by token through the KV cache, and all sequences packed in one
// batch (each in its own slot: all but the last token as one prefill, then
// every last token in one mixed-position decode step).
func checkLogits(t TB, be kernels.Backend, testdata, dir, name string, withGolden bool, o Options) {
	m, err := model.Load(dir, be)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	ref, err := model.Load(dir, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Free()
	bd := boundsFor(m)
	var cases []logitCase
	vals, err := readGolden(testdata, name+".json", &struct {
		Cases *[]logitCase `json:"cases"`
	}{&cases})
	if err != nil {
		t.Fatal(err)
	}
	var packed []logitCase
	var packedWant [][]float32
	var w worst
	for _, gc := range cases {
		if len(gc.Tokens) > o.MaxPrefill {
			continue
		}
		want, err := gc.Logits.Of(vals)
		if err != nil {
			t.Fatalf("%s.json case %s: %v", name, gc.Name, err)
		}
		packed, packedWant = append(packed, gc), append(packedWant, want)
		var b model.Batch
		b.Add(0, 0, gc.Tokens...)
		got, cpuGot, rr := logitsBoth(t, m, ref, []*model.Batch{&b}, 1, len(gc.Tokens))
		check(t, bd, &w, gc.Name+" prefill", got, cpuGot, want, withGolden, rr)
		if len(gc.Tokens) > o.MaxDecode {
			continue
		}
		steps := make([]*model.Batch, len(gc.Tokens))
		for i, id := range gc.Tokens {
			steps[i] = &model.Batch{}
			steps[i].Add(0, i, id)
		}
		got, cpuGot, rr = logitsBoth(t, m, ref, steps, 1, len(gc.Tokens))
		check(t, bd, &w, gc.Name+" decode", got, cpuGot, want, withGolden, rr)
	}
	if len(packed) == 0 {
		t.Fatalf("no golden case of %s has at most %d tokens", name, o.MaxPrefill)
	}
	// Packed: rows come out prefill first (every sequence's tokens but its
	// last, by slot), then the decode step (one last token per slot).
	var prefill, step model.Batch
	maxLen := 0
	for s, gc := range packed {
		n := len(gc.Tokens)
		if n > 1 {
			prefill.Add(s, 0, gc.Tokens[:n-1]...)
		}
		step.Add(s, n-1, gc.Tokens[n-1])
		maxLen = max(maxLen, n)
	}
	batches := []*model.Batch{&step}
	if prefill.Len() > 0 {
		batches = []*model.Batch{&prefill, &step}
	}
	got, cpuGot, rr := logitsBoth(t, m, ref, batches, len(packed), maxLen)
	v := m.Config.VocabSize
	var want []float32
	for _, lw := range packedWant {
		want = append(want, lw[:len(lw)-v]...)
	}
	for _, lw := range packedWant {
		want = append(want, lw[len(lw)-v:]...)
	}
	check(t, bd, &w, fmt.Sprintf("%d sequences packed", len(packed)), got, cpuGot, want, withGolden, rr)
	note := ""
	if !withGolden {
		note = " (f32 goldens of a bf16 copy: not checked)"
	}
	t.Logf("against the CPU backend, worst: %s (%s); against PyTorch max |Δ| %.2g%s; tokens routed differently: %d at most in one run",
		w.d, w.where, w.golden, note, w.flips)
}

// logits runs batches in order through one KV cache and returns every
// row's logits, concatenated, and, for a mixture-of-experts model, the
// experts each token was routed to (Batch.RecordExperts' layout, batch
// after batch). replay, when not nil, is such a routing to replay
// (Batch.Experts) instead of routing afresh.
func logits(t TB, m *model.Model, batches []*model.Batch, slots, maxLen int, replay []int32) ([]float32, []int32) {
	t.Helper()
	cache := m.NewKVCache(slots, maxLen)
	defer cache.Free()
	var all []float32
	var routed []int32
	for _, b := range batches {
		run := *b
		if n := m.Config.RoutingLen(b.Len()); n > 0 {
			run.RecordExperts = make([]int32, n)
			if replay != nil {
				run.Experts, replay = replay[:n], replay[n:]
			}
		}
		l, err := m.Logits(cache, &run, nil)
		if err != nil {
			t.Fatalf("%s: %v", m.Backend.Name(), err)
		}
		all, routed = append(all, l...), append(routed, run.RecordExperts...)
	}
	return all, routed
}

// logitsBoth runs batches on m and on the CPU backend's ref. A token of a
// mixture-of-experts model whose router sits near a tie between its k-th
// and (k+1)-th expert may route differently on the two backends (bf16
// activations move router logits by ~2⁻⁸ relative); its logits then differ
// by an expert's whole output, which no summation-order bound covers.
// Where the routings differ, m runs again replaying the CPU backend's
// routing, so every kernel is still held to the tight bounds, and the
// number of tokens routed differently is returned for the caller to bound.
func logitsBoth(t TB, m, ref *model.Model, batches []*model.Batch, slots, maxLen int) (got, cpuGot []float32, r rerouted) {
	t.Helper()
	got, routed := logits(t, m, batches, slots, maxLen, nil)
	cpuGot, cpuRouted := logits(t, ref, batches, slots, maxLen, nil)
	for _, b := range batches {
		r.tokens += b.Len()
	}
	if r.flips = routingFlips(routed, cpuRouted, m.Config.NumExpertsPerTok, m.Config.SparseLayers()); r.flips > 0 {
		got, _ = logits(t, m, batches, slots, maxLen, cpuRouted)
	}
	return got, cpuGot, r
}

// rerouted counts the tokens of one run routed to other experts than on
// the CPU backend.
type rerouted struct{ flips, tokens int }

// allowed is how many of the run's tokens may route differently when at
// most frac of them may (and at least one, for any frac > 0).
func (r rerouted) allowed(frac float64) int {
	if frac == 0 {
		return 0
	}
	return max(1, int(frac*float64(r.tokens)))
}

// routingFlips counts the tokens whose set of experts differs in any
// sparse layer between two routings (k experts per token per layer, S
// sparse layers; the order within a token's k does not matter).
func routingFlips(a, b []int32, k, S int) int {
	if k == 0 || S == 0 {
		return 0
	}
	flips := 0
	per := k * S
	for i := 0; i+per <= len(a) && i+per <= len(b); i += per {
		for s := 0; s < S; s++ {
			x, y := a[i+s*k:i+(s+1)*k], b[i+s*k:i+(s+1)*k]
			if !sameSet(x, y) {
				flips++
				break
			}
		}
	}
	return flips
}

func sameSet(x, y []int32) bool {
	for _, e := range x {
		found := false
		for _, f := range y {
			found = found || e == f
		}
		if !found {
			return false
		}
	}
	return true
}

// check holds got to the CPU backend's result within bd.logits and, when
// withGolden, to the PyTorch golden within bd.goldenLogits (for f32 models
// the CPU backend's own bar); the tokens routed differently from the CPU
// backend (got then replays its routing) to bd.routingFlips of the run's.
func check(t TB, bd bounds, w *worst, what string, got, cpuGot, golden []float32, withGolden bool, rr rerouted) {
	w.golden = max(w.golden, maxAbsDiff(got, golden))
	w.flips = max(w.flips, rr.flips)
	t.Helper()
	if rr.flips > rr.allowed(bd.routingFlips) {
		t.Errorf("%s: %d of %d tokens routed to other experts than on the CPU backend, want ≤ %d", what, rr.flips, rr.tokens, rr.allowed(bd.routingFlips))
	}
	d := compare(got, cpuGot)
	w.add(d, what)
	if !d.within(bd.logits) {
		t.Errorf("%s: against the CPU backend %s, want NMSE ≤ %g and max-abs ≤ %g", what, d, bd.logits.NMSE, bd.logits.MaxAbs)
	}
	if g := maxAbsDiff(got, golden); withGolden && g > bd.goldenLogits {
		t.Errorf("%s: max |Δ| = %.3g against PyTorch > %g", what, g, bd.goldenLogits)
	}
}
