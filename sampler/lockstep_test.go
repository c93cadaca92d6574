package sampler

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/kernels/inproc"
	"github.com/grpo-dev/grpo/model"
)

// TestGenerateExpertParallel: a tiny MoE sharded over 2 and 4 ranks
// (inproc, each rank on its own goroutine with a sampler of its own)
// generates greedily, each rank its own prompts — different numbers of
// them, a rank with none, a group of two equal prompts, more prompts
// than slots (two waves on one rank, one on the others) and different
// turn lengths — and every turn's tokens equal, and log-probs are within
// 1e-5 of, those of one device holding every expert generating each
// rank's prompts alone. On cpu every step is a Forward (idle ranks run
// ForwardIdle); on emu the decode steps are static (a bucket the ranks
// agree on, padding only on a rank with nothing left), and a warm one is
// one graph launch per device: the test counts at least one such step on
// every rank whose sequences decode. Qwen3-MoE, GLM-4.5 (sigmoid
// router, shared expert, a dense first layer) and Nemotron-H (Mamba-2
// layers, relu² experts; latent on cpu).
func TestGenerateExpertParallel(t *testing.T) {
	for _, c := range []struct {
		name  string
		ranks int
		emu   bool
	}{{"qwen3-moe-tiny", 2, false}, {"qwen3-moe-tiny", 4, false}, {"glm4_moe-tiny", 2, false}, {"nemotron_h-latent-tiny", 2, false},
		{"qwen3-moe-tiny", 2, true}, {"glm4_moe-tiny", 2, true}, {"nemotron_h-tiny", 2, true}} {
		name := fmt.Sprintf("%s/ranks=%d/cpu", c.name, c.ranks)
		if c.emu {
			name = fmt.Sprintf("%s/ranks=%d/emu", c.name, c.ranks)
		}
		t.Run(name, func(t *testing.T) {
			if c.emu && testing.Short() {
				t.Skip("samples under the emulator")
			}
			checkGenerateExpertParallel(t, c.name, c.ranks, c.emu)
		})
	}
}

func checkGenerateExpertParallel(t *testing.T, name string, ranks int, onEmu bool) {
	dir := filepath.Join("..", "testdata", "models", name)
	open := func() kernels.Backend {
		if !onEmu {
			return cpu.New()
		}
		b := emu.New()
		t.Cleanup(func() { b.Close() })
		return b
	}
	one, err := model.Load(dir, open())
	if err != nil {
		t.Fatal(err)
	}
	vocab := one.Config.VocabSize
	rng := rand.New(rand.NewPCG(21, uint64(ranks)))
	prompt := func() []int32 {
		p := make([]int32, 2+rng.IntN(6))
		for i := range p {
			p[i] = int32(rng.IntN(vocab))
		}
		return p
	}
	// Rank 0: a group of two and one more (two waves over 2 slots);
	// rank 1: one; of 4, rank 2 none and rank 3 two.
	prompts := make([][][]int32, ranks)
	params := make([][]Params, ranks)
	for r, n := range []int{3, 1, 0, 2}[:ranks] {
		for i := range n {
			p := prompt()
			if r == 0 && i == 1 {
				p = prompts[0][0]
			}
			prompts[r] = append(prompts[r], p)
			params[r] = append(params[r], Params{MaxTokens: 3 + (r+2*i)%5, SampleParams: kernels.SampleParams{TopP: 1}})
		}
	}
	cfg := Config{Slots: 2, MaxLen: 16}
	want := make([][]Turn, ranks)
	for r := range ranks {
		s, err := New(one, nil, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if want[r], err = s.Generate(context.Background(), prompts[r], params[r]); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	g, err := inproc.NewGroup(ranks, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	samplers := make([]*Sampler, ranks)
	for r := range ranks {
		be := open()
		coll, err := g.Join(r, be)
		if err != nil {
			t.Fatal(err)
		}
		m, err := model.LoadExperts(dir, be, coll)
		if err != nil {
			t.Fatal(err)
		}
		if samplers[r], err = New(m, nil, cfg); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(samplers[r].Close)
	}
	got := make([][]Turn, ranks)
	graphs := make([]int64, ranks)
	errs := make([]error, ranks)
	var wg sync.WaitGroup
	for r := range ranks {
		wg.Go(func() {
			var before cuda.Counts
			cb, counted := samplers[r].m.Backend.(*cuda.Backend)
			if counted {
				before = cb.Counts()
			}
			got[r], errs[r] = samplers[r].Generate(context.Background(), prompts[r], params[r])
			if counted {
				graphs[r] = cb.Counts().Sub(before).GraphLaunches
			}
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	for r := range ranks {
		worst := 0.0
		for i, w := range want[r] {
			gt := got[r][i]
			if fmt.Sprint(gt.Tokens) != fmt.Sprint(w.Tokens) {
				t.Fatalf("rank %d prompt %d: tokens %v, one device %v", r, i, gt.Tokens, w.Tokens)
			}
			for j := range w.Logprobs {
				worst = max(worst, math.Abs(float64(gt.Logprobs[j]-w.Logprobs[j])))
			}
		}
		if worst > 1e-5 {
			t.Errorf("rank %d: log-probs off one device's by up to %.3g (want ≤ 1e-5)", r, worst)
		}
		t.Logf("rank %d: %d turns, log-probs within %.3g of one device's, %d graph launches", r, len(want[r]), worst, graphs[r])
		if onEmu && len(want[r]) > 0 && graphs[r] == 0 {
			t.Errorf("rank %d: no decode step replayed a graph", r)
		}
	}
	if g.Calls("all-to-all") == 0 {
		t.Error("no all-to-all made")
	}
}
