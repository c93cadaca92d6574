package sampler

import (
	"context"
	"slices"
	"testing"
)

// TestAdmissionWithinPool checks the block reservations: blocks of 4,
// sequences of up to 20 tokens (5 blocks), a 9-token prompt shared by 4
// (its first 8 positions fill 2 blocks, reserved once): the group takes
// 2 + 4·3 = 14 blocks, which a pool of 14 holds exactly, so nothing more
// starts until it is released; without sharing only 2 sequences fit.
// Generate then runs two such groups in two waves and samples what a pool
// for all of them at once samples.
func TestAdmissionWithinPool(t *testing.T) {
	m := tinyModel(t)
	cfg := Config{Slots: 8, MaxLen: 20, BlockSize: 4, Blocks: 14}
	if got := GroupBlocks(9, 4, 20, 4, true); got != 14 {
		t.Fatalf("GroupBlocks = %d, want 14", got)
	}
	if got := ConcurrencyCap(14, 8, 9, 4, 20, 4, true); got != 4 {
		t.Errorf("cap with sharing = %d, want 4", got)
	}
	if got := ConcurrencyCap(14, 8, 9, 4, 20, 4, false); got != 2 {
		t.Errorf("cap without sharing = %d, want 2", got)
	}
	if got := ConcurrencyCap(100, 8, 9, 4, 20, 4, true); got != 8 {
		t.Errorf("cap bounded by slots = %d, want 8", got)
	}
	s := newSampler(t, m, nil, cfg)
	prompt := []int32{5, 9, 2, 44, 7, 1, 3, 80, 6}
	ps := make([]Params, 4)
	for i := range ps {
		ps[i] = sampling(uint64(i))
	}
	if !s.CanStart(len(prompt), 4) {
		t.Fatal("a group of 4 does not fit an empty pool of 14 blocks")
	}
	qs, err := s.StartGroup(prompt, ps)
	if err != nil {
		t.Fatal(err)
	}
	if s.CanStart(len(prompt), 1) {
		t.Error("a fifth sequence fits a pool the group reserved entirely")
	}
	if _, err := s.Start(prompt, ps[0]); err == nil {
		t.Error("Start beyond the pool was accepted")
	}
	s.Release(qs[0])
	if s.CanStart(len(prompt), 1) {
		t.Error("one released member freed more than its own 3 blocks")
	}
	for _, q := range qs[1:] {
		s.Release(q)
	}
	if !s.CanStart(len(prompt), 4) {
		t.Error("the pool is not whole after releasing the group")
	}
	noShare := newSampler(t, m, nil, Config{Slots: 8, MaxLen: 20, BlockSize: 4, Blocks: 14, NoPrefixSharing: true})
	if noShare.CanStart(len(prompt), 3) || !noShare.CanStart(len(prompt), 2) {
		t.Error("without sharing, want 2 sequences of 5 blocks to fit 14 blocks and 3 not to")
	}

	prompts := make([][]int32, 8)
	params := make([]Params, 8)
	for i := range prompts {
		prompts[i] = prompt
		if i >= 4 {
			prompts[i] = []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
		}
		params[i] = sampling(uint64(100 + i))
		params[i].MaxTokens = 8
	}
	got, err := s.Generate(context.Background(), prompts, params)
	if err != nil {
		t.Fatal(err)
	}
	all := newSampler(t, m, nil, Config{Slots: 8, MaxLen: 20, BlockSize: 4})
	want, err := all.Generate(context.Background(), prompts, params)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if !slices.Equal(got[i].Tokens, want[i].Tokens) {
			t.Errorf("prompt %d: %v in waves, %v at once", i, got[i].Tokens, want[i].Tokens)
		}
	}
	if st := s.Stats(); st.Forked != 6 {
		t.Errorf("%d sequences forked, want 3 per group", st.Forked)
	}
}
