package model_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/model"
)

// TestStaticDecodeSharedPrompt decodes, under emu, two GRPO groups forked
// from their prompts in a paged cache (5 rollouts of a 10-token prompt,
// whose partly filled third block each copies on its first write, and 3
// of a 12-token prompt, exactly 3 blocks) beside a row of its own, with
// padding rows: the decoder finds the groups at Load (8 rows reading
// their prompt once per group) and samples the same tokens as a decoder
// with shared-prefix attention off, over a second cache built the same
// way, with log-probs within 1e-3: the two sum the same f32 terms in
// another order (~1e-7 apart), but each step writes its new K/V rows
// into the bf16 cache, where a difference that small can flip a rounding
// (2⁻⁹ relative), so later steps differ by up to 7.3e-5 here — well
// inside the 2e-3 emu-vs-cpu bar, and a pass that drops the prefix
// partials changes the first step's tokens. After warm-up a step is still one graph launch with no host
// launch, allocation, free or memset, and no upload but the block table
// when a row enters a new block.
func TestStaticDecodeSharedPrompt(t *testing.T) {
	be := emu.New()
	defer be.Close()
	m, err := model.Load("../testdata/models/qwen3-tiny", be)
	if err != nil {
		t.Fatal(err)
	}
	const slots, maxLen, block, pad, steps = 12, 32, 4, 11, 7
	vocab := m.Config.VocabSize
	rng := rand.New(rand.NewPCG(5, 6))
	type group struct{ src, prompt, members int }
	groups := []group{{0, 10, 5}, {5, 12, 3}, {8, 7, 1}}
	prompts := make([][]int32, len(groups))
	for i, g := range groups {
		for range g.prompt {
			prompts[i] = append(prompts[i], int32(rng.IntN(vocab)))
		}
	}
	var rows []model.DecodeRow
	for _, g := range groups {
		for j := range g.members {
			rows = append(rows, model.DecodeRow{Slot: int32(g.src + j), Pos: int32(g.prompt), Token: int32(rng.IntN(vocab)),
				Params: kernels.SampleParams{Temperature: 1, TopP: 1}, PCGHi: uint64(j + 1), PCGLo: uint64(g.src + 7)})
		}
	}
	var caches [2]*model.KVCache
	var decs [2]*model.Decoder
	for i := range caches {
		c, err := m.NewPagedKVCache(slots, maxLen, block, 64)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Free()
		var pre model.Batch
		for k, g := range groups {
			pre.Add(g.src, 0, prompts[k]...)
		}
		logits, err := m.Forward(c, &pre, []int32{0})
		if err != nil {
			t.Fatal(err)
		}
		be.Free(logits)
		for _, g := range groups {
			for j := 1; j < g.members; j++ {
				if err := c.Fork(g.src+j, g.src, g.prompt); err != nil {
					t.Fatal(err)
				}
			}
		}
		caches[i], decs[i] = c, m.NewDecoder(slots)
		defer decs[i].Free()
	}
	decs[1].SetSharedPrefixAttention(false)
	for i, d := range decs {
		if err := d.Load(caches[i], rows, pad); err != nil {
			t.Fatal(err)
		}
	}
	if got := decs[0].SharedRows(); got != 8 {
		t.Fatalf("%d rows read their prompt once per group, want 8 (5 + 3; the 7-token prompt's row is alone)", got)
	}
	if got := decs[1].SharedRows(); got != 0 {
		t.Fatalf("%d rows read a shared prompt with shared-prefix attention off", got)
	}
	n := len(rows)
	tok, lp := [2][]int32{make([]int32, n), make([]int32, n)}, [2][]float32{make([]float32, n), make([]float32, n)}
	var worst float64
	defer func() { t.Logf("max |Δ log-prob| with groups and without: %.2g", worst) }()
	for step := range steps {
		if err := decs[1].Step(caches[1], tok[1], lp[1]); err != nil {
			t.Fatal(err)
		}
		before := be.Counts()
		if err := decs[0].Step(caches[0], tok[0], lp[0]); err != nil {
			t.Fatal(err)
		}
		got := be.Counts().Sub(before)
		for r := range n {
			worst = max(worst, math.Abs(float64(lp[0][r]-lp[1][r])))
			if tok[0][r] != tok[1][r] || math.Abs(float64(lp[0][r]-lp[1][r])) > 1e-3 {
				t.Fatalf("step %d row %d: token %d (log-prob %v) with groups, %d (%v) without", step, r, tok[0][r], lp[0][r], tok[1][r], lp[1][r])
			}
		}
		if step < 2 {
			continue // the first step runs op by op, the second is captured
		}
		if err := decs[0].GraphErr(); err != nil {
			t.Fatalf("step %d: the capture failed: %v", step, err)
		}
		want := cuda.Counts{GraphLaunches: 1, GraphKernels: got.GraphKernels, Syncs: 2, DtoH: 2, DtoHBytes: 4*int64(slots) + 4*int64(n), // the bucket's tokens, the rows' log-probs
			HtoD: got.HtoD, HtoDBytes: got.HtoDBytes, WeightBytes: got.WeightBytes, Atomics: got.Atomics, FLOPs: got.FLOPs} // FLOPs: cmd/grpo TestPerfModelSharedStep holds them to the plain step's
		table := int64(4 * slots * caches[0].MaxBlocks)
		if got != want || got.HtoD > 1 || got.HtoDBytes != got.HtoD*table {
			t.Fatalf("decode step %d after warm-up: %v\nwant: 1 graph launch, no host launch, alloc, free or memset, 2 syncs, at most the block table uploaded", step, got)
		}
	}
}
