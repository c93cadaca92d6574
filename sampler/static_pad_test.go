package sampler

import (
	"context"
	"slices"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/model"
)

// TestFullSamplerPadsEveryStepOnEmu is a GRPO step's shape: as many
// sequences as slots, each started on its own prompt, so every slot is
// taken and the pool is reserved in full, finishing two tokens apart
// (live counts 8, 7, …, 1). Every static step still pads to a
// power-of-two bucket with the padding slot: the decoder builds buckets
// 1, 2, 4 and 8 — ⌈log2(8)⌉+1 = 4 — and captures 4 graphs. Before the
// padding slot no step could pad (no free slot, no unreserved block), so
// each live count built a bucket of its exact size: 1..8, 8 buckets and 7
// captures (live 8 ran one step, eager, and captured nothing). The tokens
// and log-probs equal the Forward path's on the same device bit for bit,
// and after the release the pool is whole (the padding block returned).
func TestFullSamplerPadsEveryStepOnEmu(t *testing.T) {
	be := emu.New()
	defer be.Close()
	cfg := &model.Config{ModelType: "qwen3", HiddenSize: 32, IntermediateSize: 48, NumLayers: 2, NumHeads: 4,
		NumKVHeads: 2, HeadDim: 16, VocabSize: 97, RMSNormEps: 1e-6, RopeTheta: 10000, HiddenAct: "silu"}
	const slots = 8
	run := func(b kernels.Backend) ([]Turn, []int, int64) {
		m := model.NewRandom(cfg, b, 7)
		defer m.Free()
		s := newSampler(t, m, nil, Config{Slots: slots, MaxLen: 48})
		var seqs []*Seq
		for i, p := range prompts(slots) {
			ps := sampling(uint64(60 + i))
			ps.StopTokens = nil // lengths set by MaxTokens alone: the live counts are the test's
			ps.MaxTokens = 2 * (i + 1)
			q, err := s.Start(p, ps)
			if err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, q)
		}
		if s.FreeSlots() != 0 || s.CanStart(1, 1) || s.reserved != s.cfg.Blocks {
			t.Fatalf("%d free slots, %d of %d blocks reserved: want every slot taken and the pool reserved in full", s.FreeSlots(), s.reserved, s.cfg.Blocks)
		}
		before := be.Counts()
		if err := s.Run(context.Background(), seqs); err != nil {
			t.Fatal(err)
		}
		captures := be.Counts().Sub(before).Captures
		var turns []Turn
		for _, q := range seqs {
			turns = append(turns, q.Turn)
			s.Release(q)
		}
		if c := s.Cache(); c.FreeBlocks() != c.NumBlocks {
			t.Fatalf("after releasing everything %d of %d blocks are free", c.FreeBlocks(), c.NumBlocks)
		}
		var buckets []int
		if d := s.static.decoder; d != nil {
			buckets = d.Buckets()
		}
		return turns, buckets, captures
	}
	got, buckets, captures := run(be)
	want, _, _ := run(hideGraphs{be})
	t.Logf("buckets %v, %d captures", buckets, captures)
	if !slices.Equal(buckets, []int{1, 2, 4, 8}) || captures != 4 {
		t.Errorf("decode buckets %v with %d captures; want [1 2 4 8] (⌈log2 %d⌉+1) and 4", buckets, captures, slots)
	}
	for i := range want {
		if !slices.Equal(got[i].Tokens, want[i].Tokens) || !slices.Equal(got[i].Logprobs, want[i].Logprobs) || got[i].FinishReason != want[i].FinishReason {
			t.Fatalf("sequence %d: static %v %v (%s), Forward path %v %v (%s)", i,
				got[i].Tokens, got[i].Logprobs, got[i].FinishReason, want[i].Tokens, want[i].Logprobs, want[i].FinishReason)
		}
		if len(want[i].Tokens) != 2*(i+1) {
			t.Fatalf("sequence %d made %d tokens, want %d (MaxTokens): the live counts are not the test's", i, len(want[i].Tokens), 2*(i+1))
		}
	}
}
