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
		got := logits(t, m, []*model.Batch{&b}, 1, len(gc.Tokens))
		cpuGot := logits(t, ref, []*model.Batch{&b}, 1, len(gc.Tokens))
		check(t, bd, &w, gc.Name+" prefill", got, cpuGot, want, withGolden)
		if len(gc.Tokens) > o.MaxDecode {
			continue
		}
		steps := make([]*model.Batch, len(gc.Tokens))
		for i, id := range gc.Tokens {
			steps[i] = &model.Batch{}
			steps[i].Add(0, i, id)
		}
		got = logits(t, m, steps, 1, len(gc.Tokens))
		cpuGot = logits(t, ref, steps, 1, len(gc.Tokens))
		check(t, bd, &w, gc.Name+" decode", got, cpuGot, want, withGolden)
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
	got := logits(t, m, batches, len(packed), maxLen)
	cpuGot := logits(t, ref, batches, len(packed), maxLen)
	v := m.Config.VocabSize
	var want []float32
	for _, lw := range packedWant {
		want = append(want, lw[:len(lw)-v]...)
	}
	for _, lw := range packedWant {
		want = append(want, lw[len(lw)-v:]...)
	}
	check(t, bd, &w, fmt.Sprintf("%d sequences packed", len(packed)), got, cpuGot, want, withGolden)
	note := ""
	if !withGolden {
		note = " (f32 goldens of a bf16 copy: not checked)"
	}
	t.Logf("against the CPU backend, worst: %s (%s); against PyTorch max |Δ| %.2g%s", w.d, w.where, w.golden, note)
}

// logits runs batches in order through one KV cache and returns every
// row's logits, concatenated.
func logits(t TB, m *model.Model, batches []*model.Batch, slots, maxLen int) []float32 {
	t.Helper()
	cache := m.NewKVCache(slots, maxLen)
	defer cache.Free()
	var all []float32
	for _, b := range batches {
		l, err := m.Logits(cache, b, nil)
		if err != nil {
			t.Fatalf("%s: %v", m.Backend.Name(), err)
		}
		all = append(all, l...)
	}
	return all
}

// check holds got to the CPU backend's result within bd.logits and, when
// withGolden, to the PyTorch golden within bd.goldenLogits (for f32 models
// the CPU backend's own bar).
func check(t TB, bd bounds, w *worst, what string, got, cpuGot, golden []float32, withGolden bool) {
	w.golden = max(w.golden, maxAbsDiff(got, golden))
	t.Helper()
	d := compare(got, cpuGot)
	w.add(d, what)
	if !d.within(bd.logits) {
		t.Errorf("%s: against the CPU backend %s, want NMSE ≤ %g and max-abs ≤ %g", what, d, bd.logits.NMSE, bd.logits.MaxAbs)
	}
	if g := maxAbsDiff(got, golden); withGolden && g > bd.goldenLogits {
		t.Errorf("%s: max |Δ| = %.3g against PyTorch > %g", what, g, bd.goldenLogits)
	}
}
