package sampler

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

// MaxTopLogprobs bounds Params.TopLogprobs, as OpenAI's API bounds
// top_logprobs: each listed alternative costs a host pass over the row.
const MaxTopLogprobs = 20

// TokenLogprob is one token and its log-prob under the model's raw
// distribution (temperature 1, untruncated: the distribution Turn.Logprobs
// are taken from).
type TokenLogprob struct {
	ID      int32
	Logprob float32
}

// topLogprobs appends to q.Turn.TopLogprobs the TopLogprobs most likely
// tokens of row i of logits. The row is downloaded to the host: this runs
// only for sequences that ask for alternatives (an API client's
// top_logprobs), never in training rollouts.
func (s *Sampler) topLogprobs(q *Seq, logits kernels.Buffer, i, vocab int) error {
	be := s.m.Backend
	s.row = grow(s.row, vocab)
	be.Download(s.row, logits.Slice(i*vocab, vocab))
	if err := be.Sync(); err != nil {
		return fmt.Errorf("sampler: reading back logits row %d on %s: %w", i, be.Name(), err)
	}
	q.Turn.TopLogprobs = append(q.Turn.TopLogprobs, TopOf(s.row, q.params.TopLogprobs))
	return nil
}

// TopOf returns the n most likely tokens of one row of raw logits with
// their log-softmax values (float64 accumulation), most likely first, ties
// to the lower id, as the Sample op orders candidates.
func TopOf(row []float32, n int) []TokenLogprob {
	n = min(n, len(row))
	if n <= 0 {
		return nil
	}
	mx := math.Inf(-1)
	for _, x := range row {
		mx = max(mx, float64(x))
	}
	var z float64
	for _, x := range row {
		z += math.Exp(float64(x) - mx)
	}
	lse := mx + math.Log(z)
	top := make([]TokenLogprob, 0, n+1)
	for id, x := range row {
		if len(top) == n && x <= row[top[n-1].ID] {
			continue
		}
		// Insert after every entry that is at least as likely (lower ids
		// come first among equals because ids arrive in order).
		at := len(top)
		for at > 0 && row[top[at-1].ID] < x {
			at--
		}
		top = append(top, TokenLogprob{})
		copy(top[at+1:], top[at:])
		top[at] = TokenLogprob{ID: int32(id)}
		if len(top) > n {
			top = top[:n]
		}
	}
	for k := range top {
		top[k].Logprob = float32(float64(row[top[k].ID]) - lse)
	}
	return top
}

// PromptLogprobs scores a prompt as an API's echo does: for each token
// after the first, its log-prob given the tokens before it and the top
// most likely tokens at that position (none when top is 0). It runs one
// prefill of ids on m with a cache of its own, so it may be called between
// a sampler's steps on the goroutine that drives it.
func PromptLogprobs(m *model.Model, ids []int32, top int) ([]float32, [][]TokenLogprob, error) {
	if len(ids) < 2 {
		return nil, nil, nil
	}
	cache := m.NewKVCache(1, len(ids))
	defer cache.Free()
	var b model.Batch
	b.Add(0, 0, ids[:len(ids)-1]...)
	logits, err := m.Logits(cache, &b, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("sampler: prompt log-probs: %w", err)
	}
	vocab := m.Config.VocabSize
	lps := make([]float32, len(ids)-1)
	var tops [][]TokenLogprob
	for t := range lps {
		row := logits[t*vocab : (t+1)*vocab]
		full := TopOf(row, 1)
		// log-softmax of the actual next token: its logit minus the
		// row's log-sum-exp, which TopOf's best entry gives back.
		lse := float64(row[full[0].ID]) - float64(full[0].Logprob)
		lps[t] = float32(float64(row[ids[t+1]]) - lse)
		if top > 0 {
			tops = append(tops, TopOf(row, top))
		}
	}
	return lps, tops, nil
}
