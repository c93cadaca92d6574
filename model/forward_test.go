package model

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels/cpu"
)

func tinyConfig(modelType string) *Config {
	c := &Config{ModelType: modelType, HiddenSize: 32, IntermediateSize: 48, NumLayers: 2, NumHeads: 4,
		NumKVHeads: 2, HeadDim: 16, VocabSize: 97, RMSNormEps: 1e-6, RopeTheta: 10000, HiddenAct: "silu"}
	if modelType == "llama" {
		c.RopeScaling = &RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 16}
	}
	return c
}

func randomIDs(rng *rand.Rand, n, vocab int) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(rng.IntN(vocab))
	}
	return ids
}

func maxAbsDiff(a, b []float32) float64 {
	var m float64
	for i := range a {
		m = math.Max(m, math.Abs(float64(a[i]-b[i])))
	}
	return m
}

// TestDecodeEqualsFullForward checks that generating token by token through
// the KV cache reproduces the logits of one forward over the whole sequence.
func TestDecodeEqualsFullForward(t *testing.T) {
	for _, arch := range []string{"qwen3", "qwen2", "llama"} {
		t.Run(arch, func(t *testing.T) {
			m := NewRandom(tinyConfig(arch), cpu.New(), 3)
			rng := rand.New(rand.NewPCG(1, 2))
			ids := randomIDs(rng, 40, m.Config.VocabSize)
			full := m.NewKVCache(1, len(ids))
			var b Batch
			b.Add(0, 0, ids...)
			want, err := m.Logits(full, &b, nil)
			if err != nil {
				t.Fatal(err)
			}
			// Prefill 10 tokens, then decode the rest one at a time.
			cache := m.NewKVCache(1, len(ids))
			var pre Batch
			pre.Add(0, 0, ids[:10]...)
			got, err := m.Logits(cache, &pre, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := 10; i < len(ids); i++ {
				var d Batch
				d.Add(0, i, ids[i])
				step, err := m.Logits(cache, &d, nil)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, step...)
			}
			if d := maxAbsDiff(got, want); d > 1e-5 {
				t.Errorf("decode vs full forward: max |Δ| = %g", d)
			}
		})
	}
}

// TestPackedBatchEqualsSeparate checks that sequences of different lengths
// packed into one batch, each in its own slot and at its own position, give
// the same logits as running each alone.
func TestPackedBatchEqualsSeparate(t *testing.T) {
	m := NewRandom(tinyConfig("qwen3"), cpu.New(), 5)
	rng := rand.New(rand.NewPCG(3, 4))
	lens := []int{7, 1, 23, 12}
	var seqs [][]int32
	var packed Batch
	for s, n := range lens {
		ids := randomIDs(rng, n, m.Config.VocabSize)
		seqs = append(seqs, ids)
		packed.Add(s, 0, ids...)
	}
	got, err := m.Logits(m.NewKVCache(len(lens), 32), &packed, nil)
	if err != nil {
		t.Fatal(err)
	}
	off := 0
	for s, ids := range seqs {
		var b Batch
		b.Add(0, 0, ids...)
		want, err := m.Logits(m.NewKVCache(1, 32), &b, nil)
		if err != nil {
			t.Fatal(err)
		}
		v := m.Config.VocabSize
		if d := maxAbsDiff(got[off*v:(off+len(ids))*v], want); d > 1e-5 {
			t.Errorf("sequence %d: packed vs alone max |Δ| = %g", s, d)
		}
		off += len(ids)
	}
	// Batched decode: one token per slot, each at its own position.
	var step Batch
	for s := range seqs {
		step.Add(s, len(seqs[s]), int32(s+1))
	}
	if _, err := m.Logits(m.NewKVCache(len(lens), 32), &step, nil); err != nil {
		t.Fatal(err)
	}
}

func TestTokenLogprobsMatchesSoftmax(t *testing.T) {
	m := NewRandom(tinyConfig("llama"), cpu.New(), 9)
	ids := []int32{3, 14, 15, 92, 65, 35}
	lp, err := m.TokenLogprobs(ids, 2)
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	b.Add(0, 0, ids...)
	logits, _ := m.Logits(m.NewKVCache(1, len(ids)), &b, nil)
	v := m.Config.VocabSize
	for i, t0 := range []int{2, 3, 4, 5} {
		row := logits[(t0-1)*v : t0*v]
		var mx float64 = math.Inf(-1)
		for _, x := range row {
			mx = math.Max(mx, float64(x))
		}
		var s float64
		for _, x := range row {
			s += math.Exp(float64(x) - mx)
		}
		want := float64(row[ids[t0]]) - mx - math.Log(s)
		if math.Abs(float64(lp[i])-want) > 1e-5 {
			t.Errorf("logprob[%d] = %v, want %v", i, lp[i], want)
		}
	}
}

func TestForwardRejectsBadBatch(t *testing.T) {
	m := NewRandom(tinyConfig("qwen2"), cpu.New(), 1)
	cache := m.NewKVCache(2, 8)
	cases := map[string]Batch{
		"outside the vocabulary":  {Tokens: []int32{97}, Slots: []int32{0}, Positions: []int32{0}},
		"outside the cache's":     {Tokens: []int32{1}, Slots: []int32{2}, Positions: []int32{0}},
		"beyond the cache length": {Tokens: []int32{1}, Slots: []int32{0}, Positions: []int32{8}},
		"empty batch":             {},
		"slots and":               {Tokens: []int32{1, 2}, Slots: []int32{0}, Positions: []int32{0, 1}},
	}
	for want, b := range cases {
		_, err := m.Forward(cache, &b, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want error containing %q, got %v", want, err)
		}
	}
}
