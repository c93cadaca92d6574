package model

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels/cpu"
)

// TestForkedPromptMatchesOwnPrefill checks prefix sharing in the paged
// cache: three sequences that fork one prefilled 11-token prompt (blocks
// of 4, so its last block is partly filled) and then decode different
// tokens give the logits of three contiguous slots that each prefill the
// prompt themselves; the shared last block is copied by the first two
// writers only, the prompt's blocks are counted once, and releasing every
// slot returns every block.
func TestForkedPromptMatchesOwnPrefill(t *testing.T) {
	m := NewRandom(tinyConfig("qwen3"), cpu.New(), 7)
	rng := rand.New(rand.NewPCG(5, 6))
	v := m.Config.VocabSize
	prompt := randomIDs(rng, 11, v)
	const seqs, steps, maxLen = 3, 9, 24
	next := make([][]int32, seqs)
	for s := range next {
		next[s] = randomIDs(rng, steps, v)
	}

	own := m.NewKVCache(seqs, maxLen)
	defer own.Free()
	var pre Batch
	for s := range seqs {
		pre.Add(s, 0, prompt...)
	}
	if _, err := m.Logits(own, &pre, nil); err != nil {
		t.Fatal(err)
	}
	paged, err := m.NewPagedKVCache(seqs, maxLen, 4, 20)
	if err != nil {
		t.Fatal(err)
	}
	defer paged.Free()
	var one Batch
	one.Add(0, 0, prompt...)
	if _, err := m.Logits(paged, &one, nil); err != nil {
		t.Fatal(err)
	}
	for s := 1; s < seqs; s++ {
		if err := paged.Fork(s, 0, len(prompt)); err != nil {
			t.Fatal(err)
		}
	}
	if used := paged.NumBlocks - paged.FreeBlocks(); used != 3 {
		t.Fatalf("after the forks %d blocks are in use, want the prompt's 3", used)
	}
	for i := range steps {
		var d Batch
		for s := range seqs {
			d.Add(s, len(prompt)+i, next[s][i])
		}
		want, err := m.Logits(own, &d, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.Logits(paged, &d, nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := maxAbsDiff(got, want); diff > 1e-5 {
			t.Fatalf("step %d: shared prompt vs own prefill max |Δ| = %g", i, diff)
		}
	}
	if paged.Copies != seqs-1 {
		t.Errorf("%d blocks copied on write, want %d (every writer of the shared last block but the last)", paged.Copies, seqs-1)
	}
	// Positions 0..19 of each: the 2 full prompt blocks shared, 3 own blocks each.
	if used := paged.NumBlocks - paged.FreeBlocks(); used != 2+3*seqs {
		t.Errorf("%d blocks in use after decoding, want %d", used, 2+3*seqs)
	}
	for s := range seqs {
		paged.Release(s)
	}
	if paged.FreeBlocks() != paged.NumBlocks {
		t.Errorf("%d of %d blocks free after releasing every slot", paged.FreeBlocks(), paged.NumBlocks)
	}
}

// TestPagedCacheErrors checks the pool's refusals: a prefill larger than
// the pool, a fork into a slot that still maps blocks, a fork of positions
// never written, and a decode step whose earlier positions were never
// written.
func TestPagedCacheErrors(t *testing.T) {
	m := NewRandom(tinyConfig("qwen3"), cpu.New(), 7)
	c, err := m.NewPagedKVCache(2, 16, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free()
	var big Batch
	big.Add(0, 0, make([]int32, 9)...)
	if _, err := m.Logits(c, &big, nil); err == nil || !strings.Contains(err.Error(), "all 2 blocks of 4 tokens are in use") {
		t.Errorf("prefill of 9 tokens into 2 blocks of 4: got %v", err)
	}
	c.Release(0)
	var small Batch
	small.Add(0, 0, 1, 2, 3)
	if _, err := m.Logits(c, &small, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Fork(0, 0, 3); err == nil {
		t.Error("fork of a slot into itself was accepted")
	}
	if err := c.Fork(1, 0, 8); err == nil || !strings.Contains(err.Error(), "block 1 is not mapped") {
		t.Errorf("fork of unwritten positions: got %v", err)
	}
	if err := c.Fork(1, 0, 3); err != nil {
		t.Fatal(err)
	}
	if err := c.Fork(1, 0, 3); err == nil || !strings.Contains(err.Error(), "release it first") {
		t.Errorf("second fork into a mapped slot: got %v", err)
	}
	var skip Batch
	skip.Add(1, 9, 4)
	if _, err := m.Logits(c, &skip, nil); err == nil {
		t.Error("decode at position 9 after 3 written positions was accepted")
	}
	if _, err := m.NewPagedKVCache(1, 8, 0, 4); err == nil {
		t.Error("block size 0 was accepted")
	}
	if err := m.NewKVCache(1, 4).Fork(0, 0, 1); err == nil {
		t.Error("fork on a contiguous cache was accepted")
	}
}
