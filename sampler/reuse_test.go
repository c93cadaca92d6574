package sampler

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/model"
)

// TestReuseMatchesNewOnEmu plays five batches — a GRPO-like step, a
// smaller one on a bounded block pool (an eval), and the first step's
// shapes three times again with new seeds — on one sampler through
// Reuse, and each on a new sampler: every token, log-prob and finish
// reason is the same bit for bit, the reused sampler captures fewer
// graphs than a new one, and none in the last batch (its buckets were
// captured before), where a new sampler captures one per bucket again.
func TestReuseMatchesNewOnEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("generates 5 batches twice under the emulator")
	}
	be := emu.New()
	defer be.Close()
	cfg := &model.Config{ModelType: "qwen3", HiddenSize: 32, IntermediateSize: 48, NumLayers: 2, NumHeads: 4,
		NumKVHeads: 2, HeadDim: 16, VocabSize: 97, RMSNormEps: 1e-6, RopeTheta: 10000, HiddenAct: "silu"}
	m := model.NewRandom(cfg, be, 7)
	defer m.Free()
	type batch struct {
		cfg    Config
		groups int // prompts, each played by 2 sequences sharing it
		seed   uint64
	}
	batches := []batch{
		{Config{Slots: 8, MaxLen: 64}, 4, 100},
		{Config{Slots: 6, MaxLen: 48, Blocks: 10}, 3, 200},
		{Config{Slots: 8, MaxLen: 64}, 4, 300},
		{Config{Slots: 8, MaxLen: 64}, 4, 400},
		{Config{Slots: 8, MaxLen: 64}, 4, 500},
	}
	gen := func(s *Sampler, b batch) []Turn {
		ps := prompts(b.groups)
		var all [][]int32
		var params []Params
		for i, p := range ps {
			for j := range 2 {
				q := sampling(b.seed + uint64(2*i+j))
				q.StopTokens = nil // lengths set by MaxTokens alone, so each batch's live counts are its shape's
				q.MaxTokens = 4 + 3*i + j
				all, params = append(all, p), append(params, q)
			}
		}
		turns, err := s.Generate(context.Background(), all, params)
		if err != nil {
			t.Fatal(err)
		}
		return turns
	}
	var fresh [][]Turn
	var freshCaptures []int64
	for _, b := range batches {
		before := be.Counts()
		s, err := New(m, nil, b.cfg)
		if err != nil {
			t.Fatal(err)
		}
		fresh = append(fresh, gen(s, b))
		s.Close()
		freshCaptures = append(freshCaptures, be.Counts().Sub(before).Captures)
	}
	s := newSampler(t, m, nil, batches[0].cfg)
	for i, b := range batches {
		if i > 0 {
			if err := s.Reuse(nil, b.cfg); err != nil {
				t.Fatal(err)
			}
		}
		before := be.Counts()
		got := gen(s, b)
		captures := be.Counts().Sub(before).Captures
		for j := range got {
			w := fresh[i][j]
			if !slices.Equal(got[j].Tokens, w.Tokens) || !slices.Equal(got[j].Logprobs, w.Logprobs) || got[j].FinishReason != w.FinishReason {
				t.Fatalf("batch %d sequence %d: reused %v %v (%s), new sampler %v %v (%s)", i, j, got[j].Tokens, got[j].Logprobs, got[j].FinishReason, w.Tokens, w.Logprobs, w.FinishReason)
			}
		}
		t.Logf("batch %d: %d captures reused, %d on a new sampler", i, captures, freshCaptures[i])
		if freshCaptures[i] == 0 {
			t.Fatalf("batch %d: a new sampler captured no graph; the test needs the static decode path", i)
		}
		if i == 0 && captures != freshCaptures[0] {
			t.Errorf("batch 0: %d captures, want %d as a new sampler", captures, freshCaptures[0])
		}
		// Every step pads (the padding slot), so the buckets are powers
		// of two and the slots; Reuse drops one of another size that the
		// last batch did not use (batch 1's 6, after batch 2), and a
		// bucket's graph is taken at its second step, which may come a
		// batch later; by batch 4 every bucket these shapes meet has its
		// graph.
		if (i == 2 || i == 3) && captures >= freshCaptures[i] {
			t.Errorf("batch %d repeats batch 0's shapes: %d captures on the reused sampler, want fewer than a new sampler's %d", i, captures, freshCaptures[i])
		}
		if i == 4 && captures != 0 {
			t.Errorf("batch 4 repeats batch 3: %d captures on the reused sampler, want 0", captures)
		}
	}
}

// TestReuseRefusesWhatDoesNotFit: Reuse with a sequence still held, or
// for more slots, a longer max_len, more blocks or another block size
// than the cache holds, fails and names what to do; Fits agrees.
func TestReuseRefusesWhatDoesNotFit(t *testing.T) {
	m := tinyModel(t)
	s := newSampler(t, m, nil, Config{Slots: 4, MaxLen: 64})
	q, err := s.Start([]int32{1, 2, 3}, sampling(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reuse(nil, Config{Slots: 4, MaxLen: 64}); err == nil || !strings.Contains(err.Error(), "release them first") {
		t.Fatalf("Reuse with a held sequence: %v", err)
	}
	s.Release(q)
	for _, c := range []Config{{Slots: 5, MaxLen: 64}, {Slots: 4, MaxLen: 65}, {Slots: 1, MaxLen: 16, Blocks: 17}, {Slots: 4, MaxLen: 64, BlockSize: 8}} {
		if s.Fits(c) {
			t.Errorf("Fits(%+v) on a cache of 4 slots × 64 tokens (16 blocks of 16)", c)
		}
		if err := s.Reuse(nil, c); err == nil || !strings.Contains(err.Error(), "make a new sampler") {
			t.Errorf("Reuse(%+v): %v", c, err)
		}
	}
	if err := s.Reuse(nil, Config{Slots: 2, MaxLen: 32, Blocks: 3}); err != nil {
		t.Fatal(err)
	}
	if got := s.Config(); got.Slots != 2 || got.MaxLen != 32 || got.Blocks != 3 || s.FreeSlots() != 2 {
		t.Fatalf("after Reuse: %+v, %d free slots; want 2 slots, max_len 32, 3 blocks", got, s.FreeSlots())
	}
}

// TestCapacityLeavesOutThePaddingSlotOnEmu: on a backend with graphs the
// cache holds one slot and one block more than Config asks for (the
// static decode step's padding slot); Capacity, Fits and FreeSlots leave
// them out, so a sampler rebuilt from Capacity (rollout.KeptEngine) is
// the same size, not one slot larger each time. On the CPU (no graphs)
// the cache is the Config's.
func TestCapacityLeavesOutThePaddingSlotOnEmu(t *testing.T) {
	be := emu.New()
	defer be.Close()
	m := model.NewRandom(tinyModel(t).Config, be, 7)
	defer m.Free()
	cfg := Config{Slots: 4, MaxLen: 64}
	for _, c := range []struct {
		name string
		m    *model.Model
		pad  int
	}{{"emu", m, 1}, {"cpu", tinyModel(t), 0}} {
		s := newSampler(t, c.m, nil, cfg)
		if got := s.Cache(); got.Slots != 4+c.pad || got.NumBlocks != 16+c.pad {
			t.Errorf("%s: cache of %d slots and %d blocks, want %d and %d", c.name, got.Slots, got.NumBlocks, 4+c.pad, 16+c.pad)
		}
		want := Config{Slots: 4, MaxLen: 64, BlockSize: 16, Blocks: 16}
		if got := s.Capacity(); got != want || s.FreeSlots() != 4 {
			t.Errorf("%s: Capacity %+v with %d free slots, want %+v and 4", c.name, got, s.FreeSlots(), want)
		}
		if s.Fits(Config{Slots: 5, MaxLen: 64}) || s.Fits(Config{Slots: 1, MaxLen: 64, Blocks: 17}) || !s.Fits(want) {
			t.Errorf("%s: Fits counts the padding slot or block as the Config's", c.name)
		}
		s2 := newSampler(t, c.m, nil, s.Capacity())
		if a, b := s2.Cache(), s.Cache(); a.Slots != b.Slots || a.NumBlocks != b.NumBlocks {
			t.Errorf("%s: a sampler built from Capacity has %d slots and %d blocks, the original %d and %d", c.name, a.Slots, a.NumBlocks, b.Slots, b.NumBlocks)
		}
	}
}
