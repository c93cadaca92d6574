package sampler

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
)

// TestRecordExperts: with RecordExperts on Qwen3-MoE, each sequence keeps
// the experts every token it fed the model went to — prompt chunks split
// across forwards, decode steps batched with other sequences — and the
// record equals the routing of one forward over the same tokens (routing
// is per token, given its prefix). Off, nothing is kept.
func TestRecordExperts(t *testing.T) {
	m, err := model.Load(filepath.Join("..", "testdata", "models", "qwen3-moe-tiny-dense"), cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	prompts := [][]int32{{5, 17, 300, 2, 99, 41, 7}, {260, 11, 480}}
	for _, record := range []bool{true, false} {
		// PrefillTokens 4: the 7-token prompt is read in two chunks.
		s, err := New(m, nil, Config{Slots: 4, MaxLen: 16, PrefillTokens: 4, RecordExperts: record})
		if err != nil {
			t.Fatal(err)
		}
		var seqs []*Seq
		for i, pr := range prompts {
			p := DefaultParams()
			p.MaxTokens, p.Seed = 5, uint64(i+1)
			q, err := s.Start(pr, p)
			if err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, q)
		}
		if err := s.Run(context.Background(), seqs); err != nil {
			t.Fatal(err)
		}
		for i, q := range seqs {
			got := q.Experts()
			if !record {
				if got != nil {
					t.Errorf("seq %d: %d routing entries recorded with RecordExperts off", i, len(got))
				}
				continue
			}
			fed := q.Tokens()[:q.Len()-1] // the last sampled token is never read
			if len(got) != m.Config.RoutingLen(len(fed)) {
				t.Fatalf("seq %d: %d routing entries for %d tokens read, want %d", i, len(got), len(fed), m.Config.RoutingLen(len(fed)))
			}
			var b model.Batch
			b.Add(0, 0, fed...)
			b.RecordExperts = make([]int32, m.Config.RoutingLen(len(fed)))
			cache := m.NewKVCache(1, len(fed))
			if _, err := m.Logits(cache, &b, nil); err != nil {
				t.Fatal(err)
			}
			cache.Free()
			for j := range got {
				if got[j] != b.RecordExperts[j] {
					t.Fatalf("seq %d: routing entry %d is expert %d, one forward over the tokens routes to %d", i, j, got[j], b.RecordExperts[j])
				}
			}
		}
		s.Close()
	}
}

// TestRecordExpertsGroup: the children of a StartGroup group, which fork
// the parent's cached prompt instead of computing it, still record the
// routing of every token they hold (the parent's record of the forked
// positions, then their own), and each child's record and tokens equal
// those of the same rollout started alone.
func TestRecordExpertsGroup(t *testing.T) {
	m, err := model.Load(filepath.Join("..", "testdata", "models", "qwen3-moe-tiny-dense"), cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	// Nine tokens read four at a time: the parent prefills over three
	// steps while its children wait, and the forked prompt spans two
	// blocks of four and part of a third.
	prompt := []int32{5, 17, 300, 2, 99, 41, 7, 260, 11}
	cfg := Config{Slots: 3, MaxLen: 24, PrefillTokens: 4, BlockSize: 4, RecordExperts: true}
	params := make([]Params, 3)
	for i := range params {
		params[i] = DefaultParams()
		params[i].MaxTokens, params[i].Seed = 6, uint64(i+1)
	}
	s, err := New(m, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	group, err := s.StartGroup(prompt, params)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background(), group); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Forked != len(params)-1 {
		t.Fatalf("%d sequences forked the prompt, want %d", st.Forked, len(params)-1)
	}
	for i, p := range params {
		alone, err := New(m, nil, cfg)
		if err != nil {
			t.Fatal(err)
		}
		q, err := alone.Start(prompt, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := alone.Run(context.Background(), []*Seq{q}); err != nil {
			t.Fatal(err)
		}
		g := group[i]
		if !slices.Equal(g.Tokens(), q.Tokens()) {
			t.Fatalf("seq %d: group tokens %v, alone %v", i, g.Tokens(), q.Tokens())
		}
		want := m.Config.RoutingLen(g.Len() - 1)
		if len(g.Experts()) != want {
			t.Fatalf("seq %d: %d routing entries for %d tokens read, want %d", i, len(g.Experts()), g.Len()-1, want)
		}
		if !slices.Equal(g.Experts(), q.Experts()) {
			t.Errorf("seq %d: the group's routing record differs from the rollout started alone", i)
		}
		alone.Close()
	}
}
