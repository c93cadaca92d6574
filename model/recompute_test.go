package model

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels/cpu"
)

// recomputeSettings are the policies the tests run: every one, and
// per-layer checkpointing of the last layer only, the other keeping every
// activation or under selective.
var recomputeSettings = []string{"none", "swiglu", "selective", "layer", "layer:1", "selective+layer:1"}

// TestRecomputeGradientsBitIdentical: on the CPU backend every recompute
// policy gives the log-probs and LoRA gradients of RecomputeNone bit for
// bit — the backward reruns the forward's ops on the same inputs in the
// same order — on every tiny checkpoint (f32 and bf16, GQA, q/k norms,
// biases, tied heads) and a four-layer random Qwen3 (three checkpointed
// layers sharing one KV cache beside one that keeps its own), over packed
// sequences of different lengths with a subset of rows scored.
func TestRecomputeGradientsBitIdentical(t *testing.T) {
	for _, name := range append(append(goldenModels, hybridGoldenModels...), "random-qwen3-4-layers") {
		t.Run(name, func(t *testing.T) {
			var base *Model
			settings := recomputeSettings
			if name == "random-qwen3-4-layers" {
				c := tinyConfig("qwen3")
				c.NumLayers = 4
				base = NewRandom(c, cpu.New(), 3)
				settings = append(settings, "layer:3", "swiglu+layer:2")
			} else {
				var err error
				if base, err = Load(filepath.Join("..", "testdata", "models", name), cpu.New()); err != nil {
					t.Fatal(err)
				}
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
			for _, setting := range settings {
				m := base.WithAdapter(ad)
				var err error
				if m.Recompute, m.CheckpointLayers, err = ParseRecomputeSetting(setting); err != nil {
					t.Fatal(err)
				}
				got := trainGrads(t, m, ad, &b, rows, targets, dlogp)
				if setting == "none" {
					want = got
					continue
				}
				if i := firstBitDiff(got.logp, want.logp); i >= 0 {
					t.Errorf("recompute %s: log-prob %d is %g, %g without recompute", setting, i, got.logp[i], want.logp[i])
				}
				for k := range want.grads {
					if i := firstBitDiff(got.grads[k], want.grads[k]); i >= 0 {
						t.Errorf("recompute %s: gradient tensor %d element %d is %g, %g without recompute", setting, k, i, got.grads[k][i], want.grads[k][i])
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

// TestRecomputeLayerSharesOneLayersCache: the checkpointed layers of a
// trace share one layer's KV cache — all of them under RecomputeLayer, the
// last three of four under layer:3 — and freeing it frees each buffer
// once.
func TestRecomputeLayerSharesOneLayersCache(t *testing.T) {
	c := tinyConfig("qwen3")
	c.NumLayers = 4
	be := cpu.New()
	m := NewRandom(c, be, 1)
	full := m.newTrainCache(2, 8)
	const table = 2 * 4 // the identity block table: an int32 per slot
	layer := (full.Bytes() - table) / 4
	for _, tc := range []struct {
		setting string
		layers  int
	}{{"layer", 1}, {"layer:3", 2}, {"layer:1", 4}, {"layer:9", 1}, {"selective+layer:2", 3}, {"selective", 4}} {
		cm := *m
		var err error
		if cm.Recompute, cm.CheckpointLayers, err = ParseRecomputeSetting(tc.setting); err != nil {
			t.Fatal(err)
		}
		shared := cm.newTrainCache(2, 8)
		if got := shared.Bytes(); got != int64(tc.layers)*layer+table {
			t.Errorf("%s: cache of %d B, want %d layers' (%d B) and the table", tc.setting, got, tc.layers, int64(tc.layers)*layer)
		}
		shared.Free()
	}
	full.Free()
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
	for _, s := range []string{"none", "layer", "layer:1", "layer:12", "selective+layer:3", "swiglu+layer:1"} {
		p, k, err := ParseRecomputeSetting(s)
		if err != nil || RecomputeSetting(p, k) != s {
			t.Errorf("ParseRecomputeSetting(%q) = %v, %d, %v", s, p, k, err)
		}
	}
	if p, k, err := ParseRecomputeSetting("none+layer:2"); err != nil || p != RecomputeNone || k != 2 {
		t.Errorf("none+layer:2: %v, %d, %v", p, k, err)
	}
	for _, s := range []string{"layer:0", "layer:-2", "layer:x", "selective:3", "layer:", "full",
		"selective+layer", "layer+layer:2", "foo+layer:2", "selective+lay:2", "+layer:2", "selective+layer:0"} {
		if _, _, err := ParseRecomputeSetting(s); err == nil {
			t.Errorf("ParseRecomputeSetting(%q): no error", s)
		}
	}
}
