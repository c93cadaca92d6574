package model

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels/cpu"
)

// TestRecomputeGradientsBitIdentical: on the CPU backend every recompute
// policy gives the log-probs and LoRA gradients of RecomputeNone bit for
// bit — the backward reruns the forward's ops on the same inputs in the
// same order — on every tiny checkpoint (f32 and bf16, GQA, q/k norms,
// biases, tied heads), over packed sequences of different lengths with a
// subset of rows scored.
func TestRecomputeGradientsBitIdentical(t *testing.T) {
	for _, name := range goldenModels {
		t.Run(name, func(t *testing.T) {
			base, err := Load(filepath.Join("..", "testdata", "models", name), cpu.New())
			if err != nil {
				t.Fatal(err)
			}
			defer base.Free()
			ad := newTestAdapter(base, 3, 17)
			rng := rand.New(rand.NewPCG(5, 6))
			var b Batch
			var allTargets []int32
			for s, n := range []int{11, 5, 8} {
				ids := randomIDs(rng, n+1, base.Config.VocabSize)
				b.Add(s, 0, ids[:n]...)
				allTargets = append(allTargets, ids[1:]...)
			}
			var rows, targets []int32
			var dlogp []float32
			for i := b.Len() - 1; i >= 0; i -= 2 {
				rows, targets = append(rows, int32(i)), append(targets, allTargets[i])
				dlogp = append(dlogp, float32(rng.NormFloat64()))
			}
			var want traced
			for _, p := range RecomputePolicies() {
				m := base.WithAdapter(ad)
				m.Recompute = p
				got := trainGrads(t, m, ad, &b, rows, targets, dlogp)
				if p == RecomputeNone {
					want = got
					continue
				}
				if i := firstBitDiff(got.logp, want.logp); i >= 0 {
					t.Errorf("recompute %s: log-prob %d is %g, %g without recompute", p, i, got.logp[i], want.logp[i])
				}
				for k := range want.grads {
					if i := firstBitDiff(got.grads[k], want.grads[k]); i >= 0 {
						t.Errorf("recompute %s: gradient tensor %d element %d is %g, %g without recompute", p, k, i, got.grads[k][i], want.grads[k][i])
						break
					}
				}
			}
		})
	}
}

// firstBitDiff is the first index where a and b differ in their bits
// (NaN payloads included), or -1.
func firstBitDiff(a, b []float32) int {
	if len(a) != len(b) {
		return 0
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// TestRecomputeLayerSharesOneLayersCache: under RecomputeLayer the trace's
// KV cache is one layer's, whatever the depth, and freeing it frees each
// buffer once.
func TestRecomputeLayerSharesOneLayersCache(t *testing.T) {
	m := NewRandom(tinyConfig("qwen3"), cpu.New(), 1)
	full, shared := m.newTrainCache(2, 8, RecomputeNone), m.newTrainCache(2, 8, RecomputeLayer)
	if got, want := shared.Bytes()*int64(m.Config.NumLayers), full.Bytes(); got != want {
		t.Errorf("shared cache × %d layers = %d B, want the full cache's %d B", m.Config.NumLayers, got, want)
	}
	full.Free()
	shared.Free()
}

func TestParseRecompute(t *testing.T) {
	for _, p := range RecomputePolicies() {
		got, err := ParseRecompute(p.String())
		if err != nil || got != p {
			t.Errorf("ParseRecompute(%q) = %v, %v", p.String(), got, err)
		}
	}
	_, err := ParseRecompute("full")
	if err == nil || !strings.Contains(err.Error(), `"full"`) || !strings.Contains(err.Error(), "none, swiglu, selective, layer") {
		t.Errorf("ParseRecompute(\"full\"): %v; want the name and the valid policies", err)
	}
}
