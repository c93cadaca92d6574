package model

import (
	"math/rand/v2"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/emu"
)

// TestDecodeEqualsPrefillWithVariantsOnEmu is
// TestDecodeEqualsPrefillWithVariants on the CUDA kernels under the
// emulator: the prefill runs the flash kernel, each step the split-KV
// decode kernel, both over the bf16 paged cache; the bar allows the flash
// kernel's bf16 rounding of q and the probabilities on tensor cores —
// ten times below what the variants change.
func TestDecodeEqualsPrefillWithVariantsOnEmu(t *testing.T) {
	be := emu.New()
	defer be.Close()
	m := variantModel(be, 6, []int{3, 0}, randomSinks(rand.New(rand.NewPCG(1, 1))))
	defer m.Free()
	checkDecodeEqualsPrefill(t, m, 2e-3)
	plain := variantModel(be, 6, nil, nil)
	defer plain.Free()
	ids := randomIDs(rand.New(rand.NewPCG(9, 10)), 23, m.Config.VocabSize)
	v := m.Config.VocabSize
	if d := maxAbsDiff(logProbs(pagedLogits(t, m, ids), v), logProbs(pagedLogits(t, plain, ids), v)); d < 2e-2 {
		t.Errorf("the window and sinks change the log-probs by %g, too little for the bar of 2e-3 to tell", d)
	}
}

// TestVariantStaticDecodeStepOnEmu is the decode bar with a window of 3
// in layer 0 and sinks: after warm-up a step of 4 rows at positions 4..7
// (windows starting past the prompt's first tokens) is one graph launch,
// no host launch, allocation or upload, and two downloads, and its greedy
// tokens are Forward's over a second cache.
func TestVariantStaticDecodeStepOnEmu(t *testing.T) {
	be := emu.New()
	defer be.Close()
	m := variantModel(be, 6, []int{3, 0}, randomSinks(rand.New(rand.NewPCG(2, 2))))
	defer m.Free()
	const batch, prompt, steps = 4, 4, 4
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
		rows[s] = DecodeRow{Slot: int32(s), Pos: prompt, Token: next[s], Params: kernels.SampleParams{TopP: 1}}
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
			continue // the first step runs op by op, the second is captured
		}
		if err := d.GraphErr(); err != nil {
			t.Fatalf("step %d: the capture failed: %v", step, err)
		}
		want := cuda.Counts{GraphLaunches: 1, GraphKernels: got.GraphKernels, Syncs: 2, DtoH: 2, DtoHBytes: 8 * batch, WeightBytes: got.WeightBytes, Atomics: got.Atomics, FLOPs: got.FLOPs}
		if got != want || got.GraphKernels < 10 {
			t.Fatalf("decode step %d after warm-up: %v\nwant: 1 graph launch, no host launch, no alloc, free or upload, 2 syncs", step, got)
		}
	}
}
