package kerneltest

import (
	"fmt"
	"math"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
)

// The sampling suite checks kernels.SampleOps.Sample against RefSample:
// the token exactly and the log-prob to float32 rounding (tolSampleLogprob).
// It is a suite of its own, like the training suite, run in one line:
//
//	func TestSampleConformance(t *testing.T) { kerneltest.RunSample(t, cpu.New()) }
//
// Every case samples many rows in one call, each row with its own
// parameters from sampleParamSets and its own draw: u = 0, u just below 1
// and seeded draws, so the inverse CDF is checked at both ends.

// tolSampleLogprob bounds |got − want| ≤ 1e-6·max(1, |want|): the float64
// log-prob rounded once to float32 is within 2⁻²⁴ of it (cpu: max
// relative error 5.9e-8); a float32 normaliser over 151,936 terms, or a
// log-prob at the processed distribution instead of the raw one, is off
// by far more.
const tolSampleLogprob = 1e-6

// sampleParamSets cover greedy, temperature alone, each truncation alone,
// and their combinations, with top_k 1 and top_p tiny (one token), top_k
// beyond the candidate count, and the sampler's usual settings.
var sampleParamSets = []kernels.SampleParams{
	{Temperature: 0, TopP: 1},
	{Temperature: 1, TopP: 1},
	{Temperature: 0.7, TopP: 1},
	{Temperature: 1.3, TopP: 1},
	{Temperature: 1, TopP: 1, TopK: 1},
	{Temperature: 1, TopP: 1, TopK: 5},
	{Temperature: 1.3, TopP: 1, TopK: 50},
	{Temperature: 1, TopP: 1, TopK: 1 << 20},
	{Temperature: 1, TopP: 0.9},
	{Temperature: 0.6, TopP: 0.3},
	{Temperature: 1, TopP: 0.01},
	{Temperature: 1, TopP: 0.95, TopK: 20},
	{Temperature: 1, TopP: 1, MinP: 0.05},
	{Temperature: 2, TopP: 1, MinP: 0.5},
	{Temperature: 0.8, TopP: 0.9, MinP: 0.02, TopK: 40},
	{Temperature: 0.9, TopP: 0.95, MinP: 0.01, TopK: 60},
}

// sampleRowKind generates the logits of one row.
type sampleRowKind struct {
	name  string
	vocab int
	rows  int // 0: three rows per parameter set
	gen   func(e *env, i int) float32
}

func sampleRowKinds() []sampleRowKind {
	gauss := func(scale float64) func(e *env, i int) float32 {
		return func(e *env, _ int) float32 { return float32(scale * e.rng.NormFloat64()) }
	}
	return []sampleRowKind{
		{name: "one", vocab: 1, gen: gauss(1)},
		{name: "small", vocab: 7, gen: gauss(2)},
		{name: "mid", vocab: 1000, gen: gauss(3)},
		{name: "wide", vocab: 5003, gen: gauss(4)},
		// ~250 tokens per level: truncation and the draw land inside ties.
		{name: "ties", vocab: 3001, gen: func(e *env, _ int) float32 { return float32(e.rng.IntN(12)) / 2 }},
		{name: "flat", vocab: 2100, gen: func(*env, int) float32 { return 0.5 }},
		{name: "-inf", vocab: 300, gen: func(e *env, i int) float32 {
			if i%3 == 0 {
				return float32(math.Inf(-1))
			}
			return float32(e.rng.NormFloat64())
		}},
		// Qwen's vocabulary, sparsely: a few rows, a language model's shape
		// (a handful of likely tokens over a long, low tail).
		{name: "qwen", vocab: 151_936, rows: 6, gen: func(e *env, _ int) float32 {
			if e.rng.IntN(2000) == 0 {
				return float32(8 + 4*e.rng.Float64())
			}
			return float32(2 * e.rng.NormFloat64())
		}},
	}
}

// SampleCases returns the sampling suite's cases in a fixed order with
// fixed seeds.
func SampleCases() []Case {
	var cs []Case
	for i, k := range sampleRowKinds() {
		rows := k.rows
		if rows == 0 {
			rows = 3 * len(sampleParamSets)
		}
		cs = append(cs, sampleCase(fmt.Sprintf("%s,rows=%d,vocab=%d", k.name, rows, k.vocab), uint64(1900+i), rows, k.vocab,
			func(e *env, r, i int) float32 { return k.gen(e, i) }))
	}
	cs = append(cs, topKOffCase())
	// Rows the op must flag (NaN, +Inf, all −Inf) between rows it must
	// sample as usual, in one call.
	bad := []func(i int) float32{
		func(i int) float32 { return float32(i % 5) },
		func(i int) float32 {
			if i == 17 {
				return float32(math.NaN())
			}
			return 1
		},
		func(i int) float32 { return float32(i % 7) },
		func(i int) float32 {
			if i == 63 {
				return float32(math.Inf(1))
			}
			return float32(-i)
		},
		func(int) float32 { return float32(math.Inf(-1)) },
		func(i int) float32 { return float32(i % 3) },
	}
	cs = append(cs, sampleCase(fmt.Sprintf("flagged,rows=%d,vocab=64", len(bad)), 1990, len(bad), 64,
		func(e *env, r, i int) float32 { return bad[r](i) }))
	return cs
}

// RunSample runs every sampling case as a subtest t.Run("Sample", name).
func RunSample(t *testing.T, b kernels.Backend) {
	t.Helper()
	runCases(t, b, SampleCases())
}

// CheckSample runs the sampling cases and returns the failures joined,
// each prefixed "Sample/Name: ", or nil: Check for this suite.
func CheckSample(b kernels.Backend) error { return checkCases(b, SampleCases(), nil) }

// sampleCase samples rows × vocab logits from gen, row r with parameter set
// r mod len(sampleParamSets) and u = 0, just below 1, or a seeded draw by
// r mod 3 (shifted per set, so every set meets each).
func sampleCase(name string, seed uint64, rows, vocab int, gen func(e *env, r, i int) float32) Case {
	return Case{Op: "Sample", Name: name, check: func(b kernels.Backend) error {
		e := newEnv(b, seed)
		defer e.free()
		vals := make([]float32, rows*vocab)
		for r := range rows {
			for i := range vocab {
				vals[r*vocab+i] = gen(e, r, i)
			}
		}
		u := make([]float64, rows)
		p := make([]kernels.SampleParams, rows)
		for r := range rows {
			p[r] = sampleParamSets[r%len(sampleParamSets)]
			switch (r + r/len(sampleParamSets)) % 3 {
			case 0:
				u[r] = 0
			case 1:
				u[r] = math.Nextafter(1, 0)
			default:
				u[r] = e.rng.Float64()
			}
		}
		_, _, err := sampleChecked(b, e, vals, rows, vocab, u, p, nil)
		return err
	}}
}

// sampleChecked runs Sample over rows × vocab logits and checks every row
// against RefSample with ref(p[r]) (p[r] itself when ref is nil): the
// token exactly, a flagged row's NaN, the log-prob to tolSampleLogprob.
// It returns what the backend wrote.
func sampleChecked(b kernels.Backend, e *env, vals []float32, rows, vocab int, u []float64, p []kernels.SampleParams, ref func(kernels.SampleParams) kernels.SampleParams) ([]int32, []float32, error) {
	logits := e.in("logits", vals)
	token := e.intsOut("token", rows)
	logprob := e.out("logprob", nans(rows))
	b.Sample(token.view, logprob.view, logits.view, rows, vocab, u, p)
	if err := e.checkAll(); err != nil {
		return nil, nil, err
	}
	gotTok := make([]int32, rows)
	b.DownloadI32(gotTok, token.view)
	gotLp := logprob.result(b)
	for r := range rows {
		q := p[r]
		if ref != nil {
			q = ref(q)
		}
		wantTok, wantLp := RefSample(vals[r*vocab:(r+1)*vocab], q, u[r])
		where := fmt.Sprintf("row %d (T %g, top_k %d, top_p %g, min_p %g, u %v)", r, p[r].Temperature, p[r].TopK, p[r].TopP, p[r].MinP, u[r])
		if gotTok[r] != wantTok {
			return nil, nil, fmt.Errorf("%s: token %d, want %d", where, gotTok[r], wantTok)
		}
		if wantTok < 0 {
			if !math.IsNaN(float64(gotLp[r])) {
				return nil, nil, fmt.Errorf("%s: flagged row's log-prob %v, want NaN", where, gotLp[r])
			}
			continue
		}
		if d := math.Abs(float64(gotLp[r]) - wantLp); !(d <= tolSampleLogprob*math.Max(1, math.Abs(wantLp))) {
			return nil, nil, fmt.Errorf("%s: log-prob %.9g, want %.9g (|err| %.3g)", where, gotLp[r], wantLp, d)
		}
	}
	return gotTok, gotLp, nil
}

// intsOut allocates a guarded I32 output operand filled with −2, a value
// no backend writes (tokens are ≥ 0, the error flag −1), so an unwritten
// row is caught.
func (e *env) intsOut(name string, n int) *operand {
	vals := make([]int32, n)
	for j := range vals {
		vals[j] = -2
	}
	o := e.ints(name, vals)
	o.input = false
	return o
}
