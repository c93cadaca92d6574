package kerneltest

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// topKOffCase checks that top_k = -1 is "off" exactly as 0 is: vLLM and
// Prime configs write -1, Go's zero value is 0, and the sampler passes
// either through unchanged. Rows come in pairs over the same logits and
// draw, one with TopK 0 and one with -1, under each other truncation; both
// must give RefSample's token and log-prob for TopK 0, and so each other's.
func topKOffCase() Case {
	const vocab = 1000
	others := []kernels.SampleParams{
		{Temperature: 1, TopP: 1},
		{Temperature: 0.7, TopP: 0.9},
		{Temperature: 1.3, TopP: 1, MinP: 0.05},
		{Temperature: 0, TopP: 1},
	}
	draws := []float64{0, 0.5, math.Nextafter(1, 0)}
	rows := 2 * len(others) * len(draws)
	return Case{Op: "Sample", Name: fmt.Sprintf("top_k=-1 is off,rows=%d,vocab=%d", rows, vocab), check: func(b kernels.Backend) error {
		e := newEnv(b, 1995)
		defer e.free()
		vals := make([]float32, rows*vocab)
		u := make([]float64, rows)
		p := make([]kernels.SampleParams, rows)
		for r := 0; r < rows; r += 2 {
			for i := range vocab {
				x := float32(3 * e.rng.NormFloat64())
				vals[r*vocab+i], vals[(r+1)*vocab+i] = x, x
			}
			k := r / 2
			p[r], p[r+1] = others[k%len(others)], others[k%len(others)]
			p[r+1].TopK = -1
			u[r], u[r+1] = draws[k/len(others)], draws[k/len(others)]
		}
		gotTok, gotLp, err := sampleChecked(b, e, vals, rows, vocab, u, p, func(q kernels.SampleParams) kernels.SampleParams {
			q.TopK = 0
			return q
		})
		if err != nil {
			return fmt.Errorf("%v (held to top_k 0's reference)", err)
		}
		for r := 0; r < rows; r += 2 {
			if gotTok[r] != gotTok[r+1] || gotLp[r] != gotLp[r+1] {
				return fmt.Errorf("row %d (top_k -1) sampled %d (%v), row %d (top_k 0) %d (%v) from the same logits and draw", r+1, gotTok[r+1], gotLp[r+1], r, gotTok[r], gotLp[r])
			}
		}
		return nil
	}}
}
