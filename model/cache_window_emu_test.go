package model

import (
	"math/rand/v2"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/emu"
)

// TestWindowPoolStaticDecodeOnEmu is the decode bar while the sliding
// pool returns blocks: window 3 in layer 0, blocks of 4, 4 rows decoding
// from position 4 to 17 over the bf16 paged cache. After warm-up every
// step is one graph launch, no host launch, no allocation or free, two
// downloads, and an upload of each block table exactly when the step
// changed it: the full table when a row enters a new block (p % 4 = 0),
// the sliding table then too and when a window leaves a block (p−2 a
// multiple of 4, past the first block). The greedy tokens are Forward's
// over a cache that frees nothing, and at the end each row holds at most
// WindowSeqBlocks sliding blocks.
func TestWindowPoolStaticDecodeOnEmu(t *testing.T) {
	be := emu.New()
	defer be.Close()
	m := variantModel(be, 6, []int{3, 0}, randomSinks(rand.New(rand.NewPCG(2, 3))))
	defer m.Free()
	const batch, prompt, steps, bs, maxLen = 4, 4, 14, 4, 20
	vocab := m.Config.VocabSize
	rng := rand.New(rand.NewPCG(3, 4))
	var pre Batch
	for s := range batch {
		for i := range prompt {
			pre.Add(s, i, int32(rng.IntN(vocab)))
		}
	}
	perSeq := BlocksFor(maxLen, bs)
	pooled, err := m.NewPagedKVCacheWindowed(batch+1, maxLen, bs, (batch+1)*perSeq, (batch+1)*m.Config.WindowSeqBlocks(maxLen, bs)+2)
	if err != nil {
		t.Fatal(err)
	}
	defer pooled.Free()
	plain := unpooledCache(m, batch+1, maxLen, bs, (batch+1)*perSeq)
	defer plain.Free()
	for _, c := range []*KVCache{pooled, plain} {
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
		rows[s] = DecodeRow{Slot: int32(s), Pos: prompt, Token: next[s], Params: kernels.SampleParams{TopP: 1}}
	}
	d := m.NewDecoder(batch)
	defer d.Free()
	if err := d.Load(pooled, rows, batch); err != nil {
		t.Fatal(err)
	}
	table := int64((batch + 1) * perSeq * 4)
	tok, lp := make([]int32, batch), make([]float32, batch)
	for step := range steps {
		p := prompt + step
		var b Batch
		for s := range batch {
			b.Add(s, p, next[s])
		}
		logits, err := m.Logits(plain, &b, nil)
		if err != nil {
			t.Fatal(err)
		}
		before := be.Counts()
		if err := d.Step(pooled, tok, lp); err != nil {
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
			continue // the first step runs op by op, the second is captured
		}
		if err := d.GraphErr(); err != nil {
			t.Fatalf("step %d: the capture failed: %v", step, err)
		}
		var uploads int64
		if p%bs == 0 {
			uploads++ // the full table: a new block
		}
		if p%bs == 0 || (p-2)%bs == 0 && p-2 >= bs {
			uploads++ // the sliding table: a new block, or one returned
		}
		want := cuda.Counts{GraphLaunches: 1, GraphKernels: got.GraphKernels, Syncs: 2, DtoH: 2, DtoHBytes: 8 * batch,
			HtoD: uploads, HtoDBytes: uploads * table, WeightBytes: got.WeightBytes, Atomics: got.Atomics, FLOPs: got.FLOPs}
		if got != want || got.GraphKernels < 10 {
			t.Fatalf("decode step %d (position %d) after warm-up: %v\nwant: 1 graph launch, no host launch, no alloc or free, %d table uploads, 2 syncs", step, p, got, uploads)
		}
	}
	w := pooled.WindowPool()
	// Each row at position 17 reads 15..17, blocks 3 and 4 (the rows fill
	// the bucket: no padding row takes a block); blocks 0..2 of each went
	// back.
	if used := w.Blocks - w.Free; used != batch*2 || w.Dropped != batch*3 {
		t.Errorf("after decoding to position %d: %d sliding blocks in use (want %d), %d returned (want %d)", prompt+steps-1, used, batch*2, w.Dropped, batch*3)
	}
}
