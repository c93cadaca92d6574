package sampler

import (
	"context"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/turns_golden.json from the current sampler")

// goldenTurn is one generated turn as the golden file stores it: the
// log-probs as float32 bit patterns, so the comparison is exact.
type goldenTurn struct {
	Tokens       []int32  `json:"tokens"`
	LogprobBits  []uint32 `json:"logprob_bits"`
	FinishReason string   `json:"finish_reason"`
}

// goldenParams mixes every sampling transform, greedy included, across
// sequences that share batches, so the file pins the per-row parameters.
func goldenParams(i int) Params {
	p := DefaultParams()
	p.MaxTokens = 24
	p.Seed = DeriveSeed(2024, uint64(i))
	switch i % 6 {
	case 1:
		p.Temperature = 0
	case 2:
		p.Temperature, p.TopK = 0.7, 20
	case 3:
		p.TopP = 0.8
	case 4:
		p.Temperature, p.MinP = 1.4, 0.05
	case 5:
		p.Temperature, p.TopP, p.TopK, p.MinP = 0.9, 0.95, 60, 0.01
	}
	return p
}

// TestTurnsMatchGolden pins the sampler's output: the tokens of twelve
// sequences with mixed parameters, batched five at a time with chunked
// prefill, exactly, and their log-probs to within goldenLogprobULPs units
// in the last place. The golden file was written by the host sampler
// (sampler/pick.go, commit 562125b) before sampling moved behind
// kernels.Backend.Sample, so on the CPU backend the move changed nothing.
// Log-probs are not compared bit for bit because the logits come from
// sgemm, whose summation order depends on the BLAS and on the kernel it
// picks for the CPU (OpenBLAS's Haswell and SkylakeX kernels, gonum):
// on another machine the same model gives logits a last bit apart.
func TestTurnsMatchGolden(t *testing.T) {
	m := tinyModel(t)
	ps := prompts(12)
	params := make([]Params, len(ps))
	for i := range params {
		params[i] = goldenParams(i)
	}
	s := newSampler(t, m, nil, Config{Slots: 5, MaxLen: 64, PrefillTokens: 16})
	turns, err := s.Generate(context.Background(), ps, params)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]goldenTurn, len(turns))
	for i, tr := range turns {
		got[i] = goldenTurn{Tokens: tr.Tokens, FinishReason: tr.FinishReason}
		for _, lp := range tr.Logprobs {
			got[i].LogprobBits = append(got[i].LogprobBits, math.Float32bits(lp))
		}
	}
	path := filepath.Join("testdata", "turns_golden.json")
	if *update {
		b, _ := json.MarshalIndent(got, "", "\t")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want []goldenTurn
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(want) != len(got) {
		t.Fatalf("%s holds %d turns, generated %d", path, len(want), len(got))
	}
	for i := range got {
		g, w := got[i], want[i]
		if !equalIDs(g.Tokens, w.Tokens) || g.FinishReason != w.FinishReason {
			t.Errorf("sequence %d: tokens %v (%s), golden %v (%s)", i, g.Tokens, g.FinishReason, w.Tokens, w.FinishReason)
			continue
		}
		for j := range g.LogprobBits {
			if ulpDistance(g.LogprobBits[j], w.LogprobBits[j]) > goldenLogprobULPs {
				t.Errorf("sequence %d token %d: log-prob %v, golden %v", i, j,
					math.Float32frombits(g.LogprobBits[j]), math.Float32frombits(w.LogprobBits[j]))
			}
		}
	}
}

// goldenLogprobULPs bounds how far a log-prob may sit from the golden one:
// the differences seen across BLAS kernels are one unit in the last place.
const goldenLogprobULPs = 4

// ulpDistance counts the float32 values between a and b (as bit patterns
// of finite numbers of the same sign, which log-probs are).
func ulpDistance(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}
