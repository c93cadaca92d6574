package sampler

import (
	"context"
	"math"
	"slices"
	"testing"
)

// TestReseedEqualsFreshStart: a sequence reseeded after a turn and an
// appended reply samples exactly the tokens and log-probs of a new
// sequence started on all its tokens so far with that seed — what a
// server playing the turn as a request of its own samples — and not what
// it samples without the reseed (which continues the first stream).
func TestReseedEqualsFreshStart(t *testing.T) {
	m := tinyModel(t)
	ctx := context.Background()
	s := newSampler(t, m, nil, Config{Slots: 3, MaxLen: 120})
	p := sampling(5)
	p.StopTokens = nil // every turn runs its full MaxTokens
	p.MaxTokens = 12
	turnTwo := func(reseed bool) *Seq {
		q, err := s.Start(prompts(1)[0], p)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Run(ctx, []*Seq{q}); err != nil {
			t.Fatal(err)
		}
		if err := q.Append(40, 41); err != nil {
			t.Fatal(err)
		}
		if reseed {
			q.Reseed(DeriveSeed(5, 1))
		}
		if err := s.Run(ctx, []*Seq{q}); err != nil {
			t.Fatal(err)
		}
		return q
	}
	reseeded, kept := turnTwo(true), turnTwo(false)
	prefix := reseeded.Tokens()[:reseeded.Len()-len(reseeded.Turn.Tokens)]
	fp := p
	fp.Seed = DeriveSeed(5, 1)
	fresh, err := s.Start(prefix, fp)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(ctx, []*Seq{fresh}); err != nil {
		t.Fatal(err)
	}
	// Tokens exactly; log-probs to goldenLogprobULPs, as the golden test
	// holds them: the reseeded sequence's cache was written by one-row
	// decode steps and the fresh one's by a prefill of every position, and
	// the BLAS kernel sums a product in an order that depends on its row
	// count (OpenBLAS's Haswell sgemm here differs in the last bit).
	near := len(reseeded.Turn.Logprobs) == len(fresh.Turn.Logprobs)
	for j := range reseeded.Turn.Logprobs {
		if near && ulpDistance(math.Float32bits(reseeded.Turn.Logprobs[j]), math.Float32bits(fresh.Turn.Logprobs[j])) > goldenLogprobULPs {
			near = false
		}
	}
	if !slices.Equal(reseeded.Turn.Tokens, fresh.Turn.Tokens) || !near {
		t.Errorf("reseeded turn %v %v, fresh start %v %v", reseeded.Turn.Tokens, reseeded.Turn.Logprobs, fresh.Turn.Tokens, fresh.Turn.Logprobs)
	}
	if reseeded.Params().Seed != fp.Seed {
		t.Errorf("Params().Seed = %d after Reseed(%d)", reseeded.Params().Seed, fp.Seed)
	}
	if slices.Equal(reseeded.Turn.Tokens, kept.Turn.Tokens) {
		t.Errorf("the turn after Reseed equals the one without (%v): the reseed changed nothing", kept.Turn.Tokens)
	}
}
