package cpu_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

func TestSampleConformance(t *testing.T) {
	kerneltest.RunSample(t, cpu.New())
	t.Run("one-worker", func(t *testing.T) { kerneltest.RunSample(t, cpu.New(cpu.WithWorkers(1))) })
	eachKernels(t, func(t *testing.T, b *cpu.Backend) { kerneltest.RunSample(t, b) })
}

// sampleMutant is the CPU backend with Sample broken by edit, which may
// change the arguments before the op and the outputs after it.
type sampleMutant struct {
	*cpu.Backend
	before func(u []float64, p []kernels.SampleParams)
	after  func(tok []int32, lp []float32)
}

func (m sampleMutant) Sample(token, logprob, logits kernels.Buffer, rows, vocab int, u []float64, p []kernels.SampleParams) {
	u, p = append([]float64(nil), u...), append([]kernels.SampleParams(nil), p...)
	if m.before != nil {
		m.before(u, p)
	}
	m.Backend.Sample(token, logprob, logits, rows, vocab, u, p)
	if m.after != nil {
		m.after(cpu.Int32s(token)[:rows], cpu.Float32s(logprob)[:rows])
	}
}

// TestSampleSuiteCatchesMutants: each way a sampling kernel goes wrong
// must fail the suite, naming the row.
func TestSampleSuiteCatchesMutants(t *testing.T) {
	mutants := map[string]sampleMutant{
		"ignores u (always the first candidate)": {before: func(u []float64, _ []kernels.SampleParams) {
			for r := range u {
				u[r] = 0
			}
		}},
		"temperature off by 2%": {before: func(_ []float64, p []kernels.SampleParams) {
			for r := range p {
				p[r].Temperature *= 1.02
			}
		}},
		"ignores min_p": {before: func(_ []float64, p []kernels.SampleParams) {
			for r := range p {
				p[r].MinP = 0
			}
		}},
		"ignores top_k": {before: func(_ []float64, p []kernels.SampleParams) {
			for r := range p {
				p[r].TopK = 0
			}
		}},
		"top_k -1 taken as a count of 1": {before: func(_ []float64, p []kernels.SampleParams) {
			for r := range p {
				if p[r].TopK == -1 {
					p[r].TopK = 1
				}
			}
		}},
		"top_p rounded to float32": {before: func(_ []float64, p []kernels.SampleParams) {
			for r := range p {
				p[r].TopP = float64(float32(p[r].TopP))
			}
		}},
		"log-prob off by 1e-5 (a float32 normaliser's error)": {after: func(_ []int32, lp []float32) {
			for r := range lp {
				lp[r] *= 1 + 1e-5
			}
		}},
		"bad rows not flagged": {after: func(tok []int32, lp []float32) {
			for r := range tok {
				if tok[r] < 0 {
					tok[r], lp[r] = 0, 0
				}
			}
		}},
	}
	for name, m := range mutants {
		m.Backend = cpu.New()
		err := kerneltest.CheckSample(m)
		if err == nil {
			t.Errorf("%s: the sampling suite passed", name)
			continue
		}
		if !strings.Contains(err.Error(), "row ") {
			t.Errorf("%s: failure does not name the row: %v", name, err)
		}
		t.Logf("%s: %s", name, firstLine(err.Error()))
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// TestSampleRejectsBadArguments: mismatched host slices and invalid
// parameters panic naming the backend and row, as shape mistakes do.
func TestSampleRejectsBadArguments(t *testing.T) {
	be := cpu.New()
	logits, tok, lp := be.Alloc(kernels.F32, 8), be.Alloc(kernels.I32, 2), be.Alloc(kernels.F32, 2)
	ok := kernels.SampleParams{Temperature: 1, TopP: 1}
	for want, c := range map[string]struct {
		u []float64
		p []kernels.SampleParams
	}{
		"2 rows but 1 draws":       {[]float64{0}, []kernels.SampleParams{ok, ok}},
		"row 1: top_p 0":           {[]float64{0, 0}, []kernels.SampleParams{ok, {Temperature: 1}}},
		"row 0: temperature -1":    {[]float64{0, 0}, []kernels.SampleParams{{Temperature: -1, TopP: 1}, ok}},
		"row 1: u = 1 outside":     {[]float64{0, 1}, []kernels.SampleParams{ok, ok}},
		"row 0: u = NaN outside":   {[]float64{math.NaN(), 0}, []kernels.SampleParams{ok, ok}},
		"row 1: min_p 2":           {[]float64{0, 0}, []kernels.SampleParams{ok, {Temperature: 1, TopP: 1, MinP: 2}}},
		"row 0: top_k -2: must be": {[]float64{0, 0}, []kernels.SampleParams{{Temperature: 1, TopP: 1, TopK: -2}, ok}},
	} {
		func() {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, want) || !strings.HasPrefix(s, "cpu: Sample") {
					t.Errorf("want a panic containing %q, got %v", want, r)
				}
			}()
			be.Sample(tok, lp, logits, 2, 4, c.u, c.p)
		}()
	}
}

// BenchmarkSampleStep151k is one decode step of 16 sequences over Qwen's
// vocabulary, the parameters mixed as in sampler's golden test (default,
// greedy, top-k, top-p, min-p, all four).
func BenchmarkSampleStep151k(b *testing.B) {
	const vocab, rows = 151_936, 16
	be := cpu.New()
	rng := rand.New(rand.NewPCG(1, 2))
	host := make([]float32, rows*vocab)
	for i := range host {
		host[i] = float32(rng.NormFloat64() * 3)
	}
	logits, tok, lp := be.Alloc(kernels.F32, rows*vocab), be.Alloc(kernels.I32, rows), be.Alloc(kernels.F32, rows)
	be.Upload(logits, host)
	mix := []kernels.SampleParams{
		{Temperature: 1, TopP: 1}, {Temperature: 0, TopP: 1}, {Temperature: 0.7, TopP: 1, TopK: 20},
		{Temperature: 1, TopP: 0.8}, {Temperature: 1.4, TopP: 1, MinP: 0.05}, {Temperature: 0.9, TopP: 0.95, MinP: 0.01, TopK: 60},
	}
	p, u := make([]kernels.SampleParams, rows), make([]float64, rows)
	for r := range p {
		p[r] = mix[r%len(mix)]
	}
	for b.Loop() {
		for r := range u {
			u[r] = rng.Float64()
		}
		be.Sample(tok, lp, logits, rows, vocab, u, p)
	}
}
