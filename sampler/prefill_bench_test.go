package sampler

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
)

// BenchmarkGroupPrefill is the generation of one GRPO step on the CPU
// with prefix sharing and without, interleaved in the same run: 4
// examples × rollouts_per_example 8, a 256-token prompt each, 64 new
// tokens per rollout, on the qwen3-30m shape (random weights: the time
// does not depend on them). Each iteration runs both paths on fresh
// samplers, one after the other, and reports per path the prefill time
// (from the first Step until every rollout has sampled its first token:
// the prompts' prefill and, when sharing, the followers' one-token
// prefill) and the whole generation's, and the prefill speedup (old /
// new; issue 13's bar is ≥ 4). Run it idle:
//
//	go test ./sampler/ -run '^$' -bench GroupPrefill -benchtime 5x
func BenchmarkGroupPrefill(b *testing.B) {
	mc, _ := model.Shape("qwen3-30m")
	m := model.NewRandom(mc, cpu.New(), 1)
	const examples, group, promptLen, newTokens = 4, 8, 256, 64
	rng := rand.New(rand.NewPCG(1, 2))
	prompts := make([][]int32, examples)
	for i := range prompts {
		prompts[i] = make([]int32, promptLen)
		for j := range prompts[i] {
			prompts[i][j] = int32(rng.IntN(mc.VocabSize))
		}
	}
	run := func(share bool) (prefill, total time.Duration) {
		s, err := New(m, nil, Config{Slots: examples * group, MaxLen: promptLen + newTokens, NoPrefixSharing: !share})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		var seqs []*Seq
		for i, pr := range prompts {
			ps := make([]Params, group)
			for j := range ps {
				ps[j] = DefaultParams()
				ps[j].MaxTokens = newTokens
				ps[j].Seed = DeriveSeed(1, uint64(i), uint64(j))
			}
			qs, err := s.StartGroup(pr, ps)
			if err != nil {
				b.Fatal(err)
			}
			seqs = append(seqs, qs...)
		}
		for _, q := range seqs {
			if err := s.Begin(q); err != nil {
				b.Fatal(err)
			}
		}
		ctx := context.Background()
		t0 := time.Now()
		for prefill == 0 || !allDone(seqs) {
			if err := s.Step(ctx, seqs); err != nil {
				b.Fatal(err)
			}
			if prefill == 0 && allSampled(seqs) {
				prefill = time.Since(t0)
			}
		}
		return prefill, time.Since(t0)
	}
	var oldPre, newPre, oldAll, newAll time.Duration
	for b.Loop() {
		p, t := run(false)
		oldPre, oldAll = oldPre+p, oldAll+t
		p, t = run(true)
		newPre, newAll = newPre+p, newAll+t
	}
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d) / n / 1e6 }
	b.ReportMetric(ms(oldPre), "prefill-old-ms")
	b.ReportMetric(ms(newPre), "prefill-shared-ms")
	b.ReportMetric(ms(oldAll), "generate-old-ms")
	b.ReportMetric(ms(newAll), "generate-shared-ms")
	b.ReportMetric(float64(oldPre)/float64(newPre), "prefill-speedup")
	b.ReportMetric(0, "ns/op") // the iteration is two paths; the metrics above say which is which
}

func allSampled(seqs []*Seq) bool {
	for _, q := range seqs {
		if len(q.Turn.Tokens) == 0 {
			return false
		}
	}
	return true
}

func allDone(seqs []*Seq) bool {
	for _, q := range seqs {
		if !q.Done() {
			return false
		}
	}
	return true
}
