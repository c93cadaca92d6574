package sampler

import (
	"context"
	"path/filepath"
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
