package model

import (
	"math/rand/v2"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
)

// checkStaticDecodeGreedy is the decode bar under emu: batch sequences of
// a random prompt of prompt tokens decode steps greedy tokens through
// Decoder on one cache while Forward runs the same tokens on a second;
// every step's token is Forward's best (within rounding of a near-tie:
// the two paths sum in different orders), and every step after warm-up
// (the first runs op by op, the second is captured) is one graph launch
// of at least 10 kernels, no kernel launched from the host, no
// allocation, free or upload, and two waits: the downloads of the tokens
// and log-probs (8 bytes a row).
func checkStaticDecodeGreedy(t *testing.T, be *cuda.Backend, m *Model, batch, prompt, steps int) {
	t.Helper()
	vocab := m.Config.VocabSize
	rng := rand.New(rand.NewPCG(3, 4))
	var caches [2]*KVCache
	var pre Batch
	for s := range batch {
		for i := range prompt {
			pre.Add(s, i, int32(rng.IntN(vocab)))
		}
	}
	for k := range caches {
		// Blocks of 8: the steps stay in each row's first block, so no
		// step uploads a block table.
		c, err := m.NewPagedKVCache(batch+1, prompt+steps+1, 8, batch+1)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Free()
		caches[k] = c
		logits, err := m.Forward(c, &pre, []int32{0})
		if err != nil {
			t.Fatal(err)
		}
		be.Free(logits)
	}
	rows := make([]DecodeRow, batch)
	next := make([]int32, batch)
	for s := range rows {
		next[s] = int32(rng.IntN(vocab))
		rows[s] = DecodeRow{Slot: int32(s), Pos: int32(prompt), Token: next[s], Params: kernels.SampleParams{TopP: 1}}
	}
	d := m.NewDecoder(batch)
	defer d.Free()
	if err := d.Load(caches[0], rows, batch); err != nil {
		t.Fatal(err)
	}
	tok, lp := make([]int32, batch), make([]float32, batch)
	for step := range steps {
		var b Batch
		for s := range batch {
			b.Add(s, prompt+step, next[s])
		}
		logits, err := m.Logits(caches[1], &b, nil)
		if err != nil {
			t.Fatal(err)
		}
		before := be.Counts()
		if err := d.Step(caches[0], tok, lp); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		got := be.Counts().Sub(before)
		for s := range batch {
			row := logits[s*vocab : (s+1)*vocab]
			best := 0
			for v := range row {
				if row[v] > row[best] {
					best = v
				}
			}
			if tok[s] != int32(best) && row[best]-row[tok[s]] > 1e-3 {
				t.Fatalf("step %d row %d: token %d (logit %v), Forward's best %d (%v)", step, s, tok[s], row[tok[s]], best, row[best])
			}
		}
		copy(next, tok)
		if step < 2 {
			continue
		}
		if err := d.GraphErr(); err != nil {
			t.Fatalf("step %d: the capture failed: %v", step, err)
		}
		want := cuda.Counts{GraphLaunches: 1, GraphKernels: got.GraphKernels, Syncs: 2, DtoH: 2, DtoHBytes: 8 * int64(batch), WeightBytes: got.WeightBytes, Atomics: got.Atomics, FLOPs: got.FLOPs}
		if got != want || got.GraphKernels < 10 {
			t.Fatalf("decode step %d after warm-up: %v\nwant: 1 graph launch, no host launch, no alloc, free or upload, 2 syncs (the 8 bytes per row coming back)", step, got)
		}
		t.Logf("step %d: 1 graph launch of %d kernels, 0 allocations, 2 syncs", step, got.GraphKernels)
	}
}
