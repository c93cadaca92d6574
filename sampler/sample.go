package sampler

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// sampleRows draws the next token of each ready sequence from its row of
// logits (len(ready) × vocab, on the device) with Backend.Sample, each row
// with its sequence's own parameters and its own draw, and downloads only
// the tokens and log-probs. Rows the op flags (token −1: NaN, +Inf, or no
// finite logit) fail the step with the bad value named; the logits row is
// downloaded only then. The token and log-prob buffers are allocated
// after Forward has freed its activations, so they never add to the
// sampler's peak memory (trainer's estimate counts on that).
func (s *Sampler) sampleRows(logits kernels.Buffer, vocab int, ready []*Seq) error {
	be, n := s.m.Backend, len(ready)
	s.u, s.params = s.u[:0], s.params[:0]
	for _, q := range ready {
		u := 0.0
		if q.params.Temperature > 0 {
			u = q.rng.Float64() // exactly one draw per sampled token
		}
		s.u = append(s.u, u)
		s.params = append(s.params, q.params.SampleParams)
	}
	tok, lp := be.Alloc(kernels.I32, n), be.Alloc(kernels.F32, n)
	defer be.Free(tok)
	defer be.Free(lp)
	be.Sample(tok, lp, logits, n, vocab, s.u, s.params)
	s.toks, s.lps = grow(s.toks, n), grow(s.lps, n)
	be.DownloadI32(s.toks, tok)
	be.Download(s.lps, lp)
	if err := be.Sync(); err != nil {
		return fmt.Errorf("sampler: sampling on %s: %w", be.Name(), err)
	}
	for i, t := range s.toks {
		if t < 0 {
			return badRow(be, logits, i, vocab)
		}
	}
	for i, q := range ready {
		if q.params.TopLogprobs > 0 {
			if err := s.topLogprobs(q, logits, i, vocab); err != nil {
				return err
			}
		}
		q.accept(s.toks[i], float64(s.lps[i]), s.dec)
	}
	return nil
}

// badRow names the first NaN or +Inf in row i of logits, for the error a
// flagged row ends the step with.
func badRow(be kernels.Backend, logits kernels.Buffer, i, vocab int) error {
	row := make([]float32, vocab)
	be.Download(row, logits.Slice(i*vocab, vocab))
	if err := be.Sync(); err != nil {
		return fmt.Errorf("sampler: reading back logits row %d on %s: %w", i, be.Name(), err)
	}
	for id, x := range row {
		if x != x || math.IsInf(float64(x), 1) {
			return fmt.Errorf("sampler: the model's logits hold %v (sequence %d of the batch, token id %d): the weights or the adapter contain NaN or overflow", x, i, id)
		}
	}
	return fmt.Errorf("sampler: the model's logits for sequence %d of the batch are all -Inf: no token can be sampled (the weights or the adapter overflowed)", i)
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
