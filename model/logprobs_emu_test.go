package model

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/emu"
)

// TestScoringRunsAsTrainingOnEmu scores one sequence (TokenLogprobs) on
// emu and checks that scoring runs what a train step runs: for the bf16
// dense tiny model a bf16 scoring cache, the tensor-core attention (one
// forward launch per layer, none of the f32 flash or split-KV kernels)
// and log-probs within the bf16 trace's bounds of the CPU backend's
// (bf16TraceBounds) and identical to the
// training trace's own on emu: both run the same kernels over the same
// dtypes, so a policy scored by TokenLogprobs is the policy a train step
// differentiates (with the f32 scoring cache before, they differed by up
// to 3.0e-2 here, 3.4e-2 being the distance to the CPU backend's). For
// the f32 tiny model an f32 cache and the f32 kernels, as before.
func TestScoringRunsAsTrainingOnEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model under the emulator")
	}
	for _, c := range []struct {
		name string
		kv   kernels.DType
	}{{"qwen3-tiny-bf16", kernels.BF16}, {"qwen3-tiny", kernels.F32}} {
		t.Run(c.name, func(t *testing.T) {
			be := emu.New()
			defer be.Close()
			m, err := Load(filepath.Join("..", "testdata", "models", c.name), be)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Free()
			ref := loadTiny(t, c.name)
			defer ref.Free()
			ad := newTestAdapter(m, 2, 9)
			m, ref = m.WithAdapter(ad), ref.WithAdapter(newTestAdapter(ref, 2, 9))
			cache := m.NewKVCache(1, 8)
			got := cache.kvDType()
			cache.Free()
			if got != c.kv {
				t.Fatalf("emu: the scoring cache is %v, want %v", got, c.kv)
			}
			ids := randomIDs(rand.New(rand.NewPCG(3, 4)), 48, m.Config.VocabSize)
			const start = 12
			before := attentionLaunches(be, m)
			lp, err := m.TokenLogprobs(ids, start)
			if err != nil {
				t.Fatal(err)
			}
			after := attentionLaunches(be, m)
			tc, f32 := after["tc forward"]-before["tc forward"], after["f32"]-before["f32"]
			if c.kv == kernels.F32 {
				if tc != 0 || f32 == 0 {
					t.Errorf("%d tensor-core and %d f32 attention launches, want none and some", tc, f32)
				}
				return
			}
			if tc != int64(m.Config.NumLayers) || f32 != 0 {
				t.Errorf("%d tensor-core and %d f32 attention launches, want %d and none", tc, f32, m.Config.NumLayers)
			}
			cpuLp, err := ref.TokenLogprobs(ids, start)
			if err != nil {
				t.Fatal(err)
			}
			d, e := maxAbsDiff(lp, cpuLp), nmse(lp, cpuLp)
			t.Logf("log-probs against the CPU backend: max |Δ| %.3g, NMSE %.3g", d, e)
			if b := bf16TraceBounds[c.name]; d > b.lpMax || e > b.lpNMSE {
				t.Errorf("log-probs: max |Δ| %.3g, NMSE %.3g against the CPU backend, want ≤ %g and ≤ %g", d, e, b.lpMax, b.lpNMSE)
			}
			trace := traceLogprobs(t, m, ids, start)
			d = maxAbsDiff(lp, trace)
			if d != 0 {
				t.Errorf("log-probs: max |Δ| %.3g against the training trace's on emu, want identical", d)
			}
		})
	}
}

// traceLogprobs is the training trace's log-prob of ids[t] for each t in
// [start, len(ids)) under m: what a train step computes for a completion.
func traceLogprobs(t *testing.T, m *Model, ids []int32, start int) []float32 {
	t.Helper()
	var b Batch
	b.Add(0, 0, ids[:len(ids)-1]...)
	rows := make([]int32, len(ids)-start)
	for i := range rows {
		rows[i] = int32(start - 1 + i)
	}
	tr, err := m.ForwardTrain(&b, rows, ids[start:])
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Free()
	out := make([]float32, len(rows))
	m.Backend.Download(out, tr.Logp)
	if err := m.Backend.Sync(); err != nil {
		t.Fatal(err)
	}
	return out
}
