package model_test

import (
	"slices"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
)

// TestHybridDecoderMatchesForward: the static decode step of a hybrid
// model (qwen3_5-tiny: DeltaNet states continued in place, a gated
// attention layer over the paged cache) greedily picks the tokens, with
// the log-probs, that Forward gives one step at a time over a copy of the
// same cache, for rows at different positions and a padding row.
func TestHybridDecoderMatchesForward(t *testing.T) {
	be := cpu.New()
	m, err := model.Load("../testdata/models/qwen3_5-tiny", be)
	if err != nil {
		t.Fatal(err)
	}
	const rowsN, steps = 3, 5
	prompts := [][]int32{{5, 9, 13, 2}, {77, 3}, {100, 200, 300, 400, 11, 12}}
	caches := [2]*model.KVCache{}
	for k := range caches {
		c, err := m.NewPagedKVCache(rowsN+1, 16, 4, 32)
		if err != nil {
			t.Fatal(err)
		}
		caches[k] = c
		var b model.Batch
		for s, p := range prompts {
			b.Add(s, 0, p[:len(p)-1]...)
		}
		logits, err := m.Forward(c, &b, []int32{0})
		if err != nil {
			t.Fatal(err)
		}
		be.Free(logits)
	}
	rows := make([]model.DecodeRow, rowsN)
	for s, p := range prompts {
		rows[s] = model.DecodeRow{Slot: int32(s), Pos: int32(len(p) - 1), Token: p[len(p)-1], Params: kernels.SampleParams{TopP: 1}}
	}
	d := m.NewDecoder(4)
	defer d.Free()
	if err := d.Load(caches[0], rows, rowsN); err != nil {
		t.Fatal(err)
	}
	tok, lp := make([]int32, rowsN), make([]float32, rowsN)
	next := make([]int32, rowsN)
	for s := range rows {
		next[s] = rows[s].Token
	}
	for step := range steps {
		if err := d.Step(caches[0], tok, lp); err != nil {
			t.Fatal(err)
		}
		var b model.Batch
		for s := range rows {
			b.Add(s, int(rows[s].Pos)+step, next[s])
		}
		logits, err := m.Logits(caches[1], &b, nil)
		if err != nil {
			t.Fatal(err)
		}
		v := m.Config.VocabSize
		for s := range rows {
			row := logits[s*v : (s+1)*v]
			best := int32(slices.Index(row, slices.Max(row)))
			if tok[s] != best {
				t.Fatalf("step %d row %d: decoder token %d, Forward's argmax %d", step, s, tok[s], best)
			}
			next[s] = best
		}
	}
}
