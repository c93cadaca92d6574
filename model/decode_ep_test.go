package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/emu"
)

// TestStaticDecodeExpertParallel: Qwen3-MoE, GLM-4.5, Nemotron-H (plain
// and latent) and gpt-oss (f32, bf16 and MXFP4 experts, biased) tiny
// models sharded over 2 emu devices decode greedily in buckets of 4 agreed on
// by both ranks (LoadBucket): rank 0 three sequences, rank 1 one, then
// rank 1 none (a bucket of padding only) while rank 0 goes on. Every
// step's tokens equal, and log-probs are within 1e-5 of, one device's
// holding every expert that decodes each rank's sequences in the same
// bucket; the routing record of each rank's rows is one device's too.
// Once warm (the first step op by op, the second captured) a step on
// each rank is one graph launch and nothing else — no kernel launched
// from the host, no allocation, free or upload, and the tokens' and
// log-probs' downloads with a wait each, as a one-device step (a rank of
// padding only downloads no log-prob) — and
// makes two all-to-all per sparse layer, no count exchange.
func TestStaticDecodeExpertParallel(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes under the emulator")
	}
	for _, name := range []string{"qwen3-moe-tiny", "glm4_moe-tiny", "nemotron_h-tiny", "nemotron_h-latent-tiny", "gpt_oss-tiny", "gpt_oss-tiny-bf16", "gpt_oss-tiny-mxfp4"} {
		t.Run(name, func(t *testing.T) { checkStaticDecodeExpertParallel(t, name) })
	}
}

func checkStaticDecodeExpertParallel(t *testing.T, name string) {
	const ranks, bucket, prompt, maxLen = 2, 4, 5, 16
	seqs := [ranks]int{3, 1}
	phases := []struct{ steps, live1 int }{{4, 1}, {2, 0}} // rank 1's sequences per phase
	dir := filepath.Join("..", "testdata", "models", name)
	open := func() *cuda.Backend {
		b := emu.New()
		t.Cleanup(func() { b.Close() })
		return b
	}
	one, err := Load(dir, open())
	if err != nil {
		t.Fatal(err)
	}
	c := one.Config
	per := c.RoutingLen(1)
	rng := rand.New(rand.NewPCG(3, 9))
	prompts := make([][][]int32, ranks)
	starts := make([][]int32, ranks)
	for r := range ranks {
		for range seqs[r] {
			prompts[r] = append(prompts[r], randomIDs(rng, prompt, c.VocabSize))
			starts[r] = append(starts[r], int32(rng.IntN(c.VocabSize)))
		}
	}
	// decode runs rank r's sequences on m over its own cache: the
	// prefill, then each phase's steps in buckets of 4, returning every
	// step's tokens, log-probs and routing record, and each warm step's
	// counts. live(phase) is how many of its sequences decode then.
	type result struct {
		tok    [][]int32
		lp     [][]float32
		rec    [][]int32
		counts []cuda.Counts
	}
	decode := func(m *Model, r int, live func(phase int) int) (res result, err error) {
		be := m.Backend.(*cuda.Backend)
		cache := m.NewKVCache(seqs[r]+1, maxLen) // the last slot pads
		defer cache.Free()
		var b Batch
		for s, p := range prompts[r] {
			b.Add(s, 0, p...)
		}
		logits, err := m.Forward(cache, &b, []int32{0})
		if err != nil {
			return res, err
		}
		be.Free(logits)
		rows := make([]DecodeRow, seqs[r])
		for s := range rows {
			rows[s] = DecodeRow{Slot: int32(s), Pos: prompt, Token: starts[r][s], Params: kernels.SampleParams{TopP: 1}}
		}
		d := m.NewDecoder(bucket)
		defer d.Free()
		steps := 0
		for ph, p := range phases {
			n := live(ph)
			if err := d.LoadBucket(cache, rows[:n], seqs[r], bucket); err != nil {
				return res, err
			}
			for range p.steps {
				tok, lp := make([]int32, n), make([]float32, n)
				var rec []int32
				if n > 0 {
					rec = make([]int32, n*per)
				}
				before := be.Counts()
				if err := d.StepRecording(cache, tok, lp, rec); err != nil {
					return res, fmt.Errorf("step %d: %w", steps, err)
				}
				if steps >= 2 {
					res.counts = append(res.counts, be.Counts().Sub(before))
				}
				steps++
				res.tok, res.lp, res.rec = append(res.tok, tok), append(res.lp, lp), append(res.rec, rec)
				for s := range n {
					rows[s].Token, rows[s].Pos = tok[s], rows[s].Pos+1
				}
			}
		}
		return res, nil
	}
	g, models := openRanks(t, dir, ranks, func() kernels.Backend { return open() }, LoadExperts)
	got := make([]result, ranks)
	runRanks(t, ranks, func(r int) error {
		var err error
		got[r], err = decode(models[r], r, func(ph int) int {
			if r == 1 {
				return phases[ph].live1
			}
			return seqs[0]
		})
		return err
	})
	totalSteps := 0
	for _, p := range phases {
		totalSteps += p.steps
	}
	sparse := c.SparseLayers()
	if n, a := g.Calls("counts"), g.Calls("all-to-all"); n != sparse || a != 2*sparse+2*sparse*totalSteps {
		t.Errorf("%d count exchanges and %d all-to-all: want %d (the prefill's) and %d (the prefill's 2 and each of %d steps' 2 per sparse layer)",
			n, a, sparse, 2*sparse+2*sparse*totalSteps, totalSteps)
	}
	for r := range ranks {
		want, err := decode(one, r, func(ph int) int {
			if r == 1 {
				return phases[ph].live1
			}
			return seqs[0]
		})
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for s := range want.tok {
			for i := range want.tok[s] {
				if got[r].tok[s][i] != want.tok[s][i] {
					t.Fatalf("rank %d step %d row %d: token %d, one device %d", r, s, i, got[r].tok[s][i], want.tok[s][i])
				}
				worst = max(worst, math.Abs(float64(got[r].lp[s][i]-want.lp[s][i])))
			}
			for i := range want.rec[s] {
				if got[r].rec[s][i] != want.rec[s][i] {
					t.Fatalf("rank %d step %d: routing record %v, one device %v", r, s, got[r].rec[s], want.rec[s])
				}
			}
		}
		if worst > 1e-5 {
			t.Errorf("rank %d: log-probs off one device's by up to %.3g (want ≤ 1e-5)", r, worst)
		}
		t.Logf("rank %d: log-probs within %.3g of one device's", r, worst)
		for i, d := range got[r].counts {
			if d.GraphLaunches != 1 || d.Launches != 0 || d.GEMMs != 0 || d.Allocs != 0 || d.Frees != 0 || d.HtoD != 0 || d.Syncs != d.DtoH || d.DtoH < 1 || d.DtoH > 2 {
				t.Errorf("rank %d warm step %d: %v; want one graph launch, the downloads (tokens, and log-probs of any row) and a wait each", r, i, d)
			}
		}
	}
}
