package rollout

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/internal/tinymodel"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/tokenizer"
)

// BenchmarkKeptSampler plays one GRPO step's rollouts — 4 examples × 4,
// single-turn, 16 new tokens each, on a 2-layer width-64 Qwen3 with the
// byte tokenizer — per iteration twice, on the emulated CUDA backend
// (decode graphs) and on the CPU backend (none): through Local, which
// builds a sampler (KV pool, decoder workspaces and, on emu, the
// bucket's eager warm-up step and capture) and frees it, and through a
// warm KeptEngine, which reuses them (the two in alternating order). It
// reports new-ms and kept-ms per call and, on emu, what each call asks
// of the device (cuda.Counts): host launches, captures, allocations.
//
//	go test ./rollout -run '^$' -bench KeptSampler -benchtime 10x
func BenchmarkKeptSampler(b *testing.B) {
	dir := b.TempDir()
	if err := tinymodel.WriteByteTokenizer(dir); err != nil {
		b.Fatal(err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	var exs []env.Example
	for i := range 4 {
		exs = append(exs, env.Example{ID: fmt.Sprint(i), Prompt: []chat.Message{{Role: "user", Content: fmt.Sprintf("Reverse the text number %d, please.", i)}}})
	}
	p := rolloutParams()
	p.MaxTokens, p.StopTokens = 16, []int32{-1} // no stop: every rollout takes 16 tokens
	for _, c := range []struct {
		name string
		be   func() kernels.Backend
	}{{"emu", func() kernels.Backend { return emu.New() }}, {"cpu", func() kernels.Backend { return cpu.New() }}} {
		b.Run(c.name, func(b *testing.B) {
			be := c.be()
			cfg := &model.Config{ModelType: "qwen3", HiddenSize: 64, IntermediateSize: 128, NumLayers: 2, NumHeads: 4,
				NumKVHeads: 2, HeadDim: 16, VocabSize: tok.VocabSize(), RMSNormEps: 1e-6, RopeTheta: 10000, HiddenAct: "silu"}
			m := model.NewRandom(cfg, be, 3)
			defer m.Free()
			e := echoEnv{turns: 1}
			kept := NewKeptEngine(m, tok)
			defer kept.Close(context.Background())
			if _, err := kept.Play(context.Background(), e, exs, 4, p, 1, Options{}); err != nil {
				b.Fatal(err)
			}
			counts := func() cuda.Counts {
				if cb, ok := be.(interface{ Counts() cuda.Counts }); ok {
					return cb.Counts()
				}
				return cuda.Counts{}
			}
			var tNew, tKept time.Duration
			var cNew, cKept cuda.Counts
			seed := uint64(2)
			newCall := func() {
				c0, t0 := counts(), time.Now()
				if _, err := Local(context.Background(), m, tok, e, exs, 4, p, seed, Options{}); err != nil {
					b.Fatal(err)
				}
				tNew += time.Since(t0)
				cNew = add(cNew, counts().Sub(c0))
			}
			keptCall := func() {
				c0, t0 := counts(), time.Now()
				if _, err := kept.Play(context.Background(), e, exs, 4, p, seed, Options{}); err != nil {
					b.Fatal(err)
				}
				tKept += time.Since(t0)
				cKept = add(cKept, counts().Sub(c0))
			}
			for b.Loop() {
				if seed%2 == 0 {
					newCall()
					keptCall()
				} else {
					keptCall()
					newCall()
				}
				seed++
			}
			n := float64(b.N)
			b.ReportMetric(float64(tNew.Microseconds())/1e3/n, "new-ms")
			b.ReportMetric(float64(tKept.Microseconds())/1e3/n, "kept-ms")
			if c.name == "emu" {
				b.ReportMetric(float64(cNew.Launches+cNew.GEMMs)/n, "new-launches")
				b.ReportMetric(float64(cKept.Launches+cKept.GEMMs)/n, "kept-launches")
				b.ReportMetric(float64(cNew.Captures)/n, "new-captures")
				b.ReportMetric(float64(cKept.Captures)/n, "kept-captures")
				b.ReportMetric(float64(cNew.Allocs)/n, "new-allocs")
				b.ReportMetric(float64(cKept.Allocs)/n, "kept-allocs")
			}
		})
	}
}

// add sums the counts this benchmark reports.
func add(a, b cuda.Counts) cuda.Counts {
	a.Launches, a.GEMMs, a.Captures, a.Allocs = a.Launches+b.Launches, a.GEMMs+b.GEMMs, a.Captures+b.Captures, a.Allocs+b.Allocs
	return a
}
