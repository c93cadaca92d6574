package model

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
)

// variantModel is the tiny qwen3 model of seed with per-layer sliding
// windows and, when sinks is not nil, attention sinks set to it (the same
// logits in every layer, one per query head).
func variantModel(be kernels.Backend, seed uint64, windows []int, sinks []float32) *Model {
	cfg := tinyConfig("qwen3")
	cfg.SlidingWindows = windows
	cfg.AttentionSinks = sinks != nil
	m := NewRandom(cfg, be, seed)
	for l := range m.W.Layers {
		if sinks != nil {
			be.Upload(m.W.Layers[l].Sinks, sinks)
		}
	}
	return m
}

// randomSinks is one sink logit per head of the tiny config, N(0, 1.5²):
// wide enough that some heads' sinks take most of the mass.
func randomSinks(rng *rand.Rand) []float32 {
	s := make([]float32, tinyConfig("qwen3").NumHeads)
	for i := range s {
		s[i] = float32(1.5 * rng.NormFloat64())
	}
	return s
}

// pagedLogits runs one sequence through a paged cache of blocks of 4 (so
// windows start mid-block and cross blocks) and returns its logits.
func pagedLogits(t *testing.T, m *Model, ids []int32) []float32 {
	t.Helper()
	cache, err := m.NewPagedKVCache(1, len(ids), 4, (len(ids)+3)/4)
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Free()
	var b Batch
	b.Add(0, 0, ids...)
	got, err := m.Logits(cache, &b, nil)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestSlidingWindowHidesOutOfWindowTokens changes token 0 of 16. With
// windows of 3 in both layers a position p sees tokens p−4..p, so the
// logits at positions 5.. are bit for bit the same and those at 0..4
// differ; with the second layer full, token 0 reaches the last position.
func TestSlidingWindowHidesOutOfWindowTokens(t *testing.T) {
	be := cpu.New()
	rng := rand.New(rand.NewPCG(5, 6))
	ids := randomIDs(rng, 16, tinyConfig("qwen3").VocabSize)
	changed := append([]int32(nil), ids...)
	changed[0] = (ids[0] + 1) % int32(tinyConfig("qwen3").VocabSize)
	sinks := randomSinks(rng)

	m := variantModel(be, 3, []int{3, 3}, sinks)
	a, b := pagedLogits(t, m, ids), pagedLogits(t, m, changed)
	v := m.Config.VocabSize
	for p := range len(ids) {
		d := maxAbsDiff(a[p*v:(p+1)*v], b[p*v:(p+1)*v])
		switch {
		case p >= 5 && d != 0:
			t.Errorf("windows 3, 3: position %d sees token 0: max |Δlogit| = %g, want 0", p, d)
		case p < 5 && d < 1e-4:
			t.Errorf("windows 3, 3: position %d does not see token 0 (max |Δlogit| = %g)", p, d)
		}
	}
	m.Free()

	m = variantModel(be, 3, []int{3, 0}, sinks)
	a, b = pagedLogits(t, m, ids), pagedLogits(t, m, changed)
	if d := maxAbsDiff(a[15*v:], b[15*v:]); d < 1e-4 {
		t.Errorf("windows 3, full: the full layer does not carry token 0 to position 15 (max |Δlogit| = %g)", d)
	}
	m.Free()
}

// TestSinksChangeLogprobs: random sinks change the logits; sinks of −80
// (e^−80 ≈ 2e−35 beside a row's sum ≥ e^(max score)) leave them within
// f32 rounding; a window at least the sequence's length is full attention
// bit for bit.
func TestSinksChangeLogprobs(t *testing.T) {
	be := cpu.New()
	rng := rand.New(rand.NewPCG(7, 8))
	ids := randomIDs(rng, 12, tinyConfig("qwen3").VocabSize)
	plain := variantModel(be, 4, nil, nil)
	want := pagedLogits(t, plain, ids)
	plain.Free()

	m := variantModel(be, 4, nil, randomSinks(rng))
	if d := maxAbsDiff(pagedLogits(t, m, ids), want); d < 1e-3 {
		t.Errorf("random sinks: max |Δlogit| = %g, want a visible change", d)
	}
	m.Free()
	low := make([]float32, tinyConfig("qwen3").NumHeads)
	for i := range low {
		low[i] = -80
	}
	m = variantModel(be, 4, nil, low)
	if d := maxAbsDiff(pagedLogits(t, m, ids), want); d > 1e-6 {
		t.Errorf("sinks of −80: max |Δlogit| = %g, want ≤ 1e-6", d)
	}
	m.Free()
	m = variantModel(be, 4, []int{12, 40}, nil)
	if d := maxAbsDiff(pagedLogits(t, m, ids), want); d != 0 {
		t.Errorf("windows ≥ length: max |Δlogit| = %g, want 0", d)
	}
	m.Free()
}

// checkDecodeEqualsPrefill prefills 5 tokens of 23 into a paged cache of
// blocks of 4, decodes the rest one at a time, and compares every
// position's log-probs with one forward over the whole sequence.
func checkDecodeEqualsPrefill(t *testing.T, m *Model, tol float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(9, 10))
	ids := randomIDs(rng, 23, m.Config.VocabSize)
	want := logProbs(pagedLogits(t, m, ids), m.Config.VocabSize)
	cache, err := m.NewPagedKVCache(1, len(ids), 4, 6)
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Free()
	var pre Batch
	pre.Add(0, 0, ids[:5]...)
	got, err := m.Logits(cache, &pre, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 5; i < len(ids); i++ {
		var d Batch
		d.Add(0, i, ids[i])
		step, err := m.Logits(cache, &d, nil)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, step...)
	}
	d := maxAbsDiff(logProbs(got, m.Config.VocabSize), want)
	if d > tol {
		t.Errorf("decode vs prefill log-probs: max |Δ| = %g, want ≤ %g", d, tol)
	}
	t.Logf("decode vs prefill log-probs: max |Δ| = %.3g", d)
}

// logProbs is log_softmax of each row of logits.
func logProbs(logits []float32, vocab int) []float32 {
	out := make([]float32, len(logits))
	for r := 0; r < len(logits); r += vocab {
		row := logits[r : r+vocab]
		mx := math.Inf(-1)
		for _, x := range row {
			mx = math.Max(mx, float64(x))
		}
		z := 0.0
		for _, x := range row {
			z += math.Exp(float64(x) - mx)
		}
		for j, x := range row {
			out[r+j] = float32(float64(x) - mx - math.Log(z))
		}
	}
	return out
}

// TestDecodeEqualsPrefillWithVariants: token-by-token decode reproduces
// the prefill's log-probs with a window of 3 in layer 0 (crossing blocks
// of 4) and sinks, on the CPU backend.
func TestDecodeEqualsPrefillWithVariants(t *testing.T) {
	m := variantModel(cpu.New(), 6, []int{3, 0}, randomSinks(rand.New(rand.NewPCG(1, 1))))
	defer m.Free()
	checkDecodeEqualsPrefill(t, m, 1e-5)
}

// TestLoRAGradientsWithVariants is TestLoRAGradientsFiniteDifference on
// a model with a window of 3 in layer 0 and sinks: the backward's window
// and sink-bearing lse match the forward's.
func TestLoRAGradientsWithVariants(t *testing.T) {
	be := cpu.New()
	rng := rand.New(rand.NewPCG(8, 9))
	m := variantModel(be, 11, []int{3, 0}, randomSinks(rng))
	ad := newTestAdapter(m, 3, 5)
	m = m.WithAdapter(ad)
	b, targets := packedTrainBatch(rng, m.Config.VocabSize)
	c := make([]float32, b.Len())
	for i := range c {
		c[i] = float32(rng.NormFloat64())
	}
	tr, err := m.ForwardTrain(b, nil, targets)
	if err != nil {
		t.Fatal(err)
	}
	dlogp := be.Alloc(kernels.F32, len(c))
	be.Upload(dlogp, c)
	if err := tr.Backward(dlogp); err != nil {
		t.Fatal(err)
	}
	tr.Free()
	for l := range ad.l {
		for _, p := range []Proj{ProjQ, ProjK, ProjV} {
			if lr := ad.l[l][p]; lr != nil {
				checkDirectional(t, m, b, targets, c, lr.A, lr.DA, rng, l, p)
			}
		}
	}
}

// TestAttentionVariantConfig: layer_types and sliding_window resolve to
// per-layer windows (bad entries are errors naming the layer); a family
// with sinks loads model.layers.N.self_attn.sinks, one f32 per query head,
// counted in the parameters.
func TestAttentionVariantConfig(t *testing.T) {
	w, err := SlidingWindowsFrom([]string{"sliding_attention", "full_attention", "sliding_attention"}, 128)
	if err != nil || len(w) != 3 || w[0] != 128 || w[1] != 0 || w[2] != 128 {
		t.Errorf("SlidingWindowsFrom = %v, %v; want [128 0 128]", w, err)
	}
	if _, err := SlidingWindowsFrom([]string{"full_attention", "chunked_attention"}, 128); err == nil || !strings.Contains(err.Error(), "layer_types[1]") {
		t.Errorf("an unknown layer type: err = %v, want one naming layer_types[1]", err)
	}
	if _, err := SlidingWindowsFrom([]string{"sliding_attention"}, 0); err == nil {
		t.Error("a sliding layer with sliding_window 0 is accepted")
	}
	cfg := tinyConfig("qwen3")
	plainParams := cfg.ParamCount()
	cfg.AttentionSinks = true
	if got, want := cfg.ParamCount()-plainParams, int64(cfg.NumLayers*cfg.NumHeads); got != want {
		t.Errorf("sinks add %d parameters, want %d", got, want)
	}
	var ws Weights
	found := 0
	for _, sp := range cfg.specs(&ws) {
		if strings.HasSuffix(sp.name, "self_attn.sinks") {
			found++
			if len(sp.shape) != 1 || sp.shape[0] != cfg.NumHeads || !sp.f32 {
				t.Errorf("%s: shape %v, f32 %v; want [%d] kept f32", sp.name, sp.shape, sp.f32, cfg.NumHeads)
			}
		}
	}
	if found != cfg.NumLayers {
		t.Errorf("%d sinks tensors for %d layers", found, cfg.NumLayers)
	}
	cfg.SlidingWindows = []int{3}
	if err := cfg.validateAttentionVariants(); err == nil {
		t.Error("one sliding window for two layers is accepted")
	}
}
