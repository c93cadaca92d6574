package emu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
)

// samplePasses samples rows of a Qwen-sized vocabulary (a language
// model's shape: a few likely tokens over a long, low tail) with p on a
// fresh emulated device and returns the logit reads sample_f32 counted,
// in passes over the rows (bytes / (rows·vocab·4)), and the tokens.
func samplePasses(t *testing.T, p kernels.SampleParams) (float64, []int32) {
	t.Helper()
	const rows, vocab = 4, 151_936
	rng := rand.New(rand.NewPCG(3, 4))
	vals := make([]float32, rows*vocab)
	for i := range vals {
		vals[i] = float32(2 * rng.NormFloat64())
		if rng.IntN(2000) == 0 {
			vals[i] = float32(8 + 4*rng.Float64())
		}
	}
	d := NewDevice()
	b := newBackend(d)
	defer b.Close()
	logits := b.Alloc(kernels.F32, rows*vocab)
	token, logprob := b.Alloc(kernels.I32, rows), b.Alloc(kernels.F32, rows)
	b.Upload(logits, vals)
	u := []float64{0, 0.3, 0.77, math.Nextafter(1, 0)}
	ps := []kernels.SampleParams{p, p, p, p}
	b.Sample(token, logprob, logits, rows, vocab, u, ps)
	got := make([]int32, rows)
	b.DownloadI32(got, token)
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	return float64(d.ReadBytes("sample_f32")) / (4 * rows * vocab), got
}

// TestSampleReadsEachRowFewTimes bounds the passes sample_f32 makes over a
// row (counted reads of the logits under emu): greedy reads it twice (max;
// normaliser and argmax), untruncated sampling (min-p alone included) at
// most three times (the id-order draw stops at the token), truncated
// sampling (top-k, top-p and their mix) three times: the max, one pass
// that histograms the candidates while it sums the normaliser, and one
// that stages the cut's candidates in shared memory. Measured before the
// staging (the threshold searches): greedy 2, untruncated 4.75, min-p
// 4.74, top-k 50 66.5, top-p 100.6, mixed 95.9 passes.
func TestSampleReadsEachRowFewTimes(t *testing.T) {
	for _, c := range []struct {
		name   string
		p      kernels.SampleParams
		passes float64
	}{
		{"greedy", kernels.SampleParams{Temperature: 0, TopP: 1}, 2},
		{"untruncated", kernels.SampleParams{Temperature: 1, TopP: 1}, 3},
		{"top-k", kernels.SampleParams{Temperature: 1, TopP: 1, TopK: 50}, 3},
		{"top-p", kernels.SampleParams{Temperature: 0.7, TopP: 0.9}, 3},
		{"min-p", kernels.SampleParams{Temperature: 1, TopP: 1, MinP: 0.05}, 3},
		{"mixed", kernels.SampleParams{Temperature: 0.8, TopP: 0.9, MinP: 0.02, TopK: 40}, 3},
	} {
		passes, _ := samplePasses(t, c.p)
		t.Logf("%s: %.2f passes over each row", c.name, passes)
		if passes > c.passes {
			t.Errorf("%s: sample_f32 read each row %.2f times, want ≤ %g", c.name, passes, c.passes)
		}
	}
}
