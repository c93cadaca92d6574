// Package scripted makes a model play fixed assistant turns, for tests
// that drive the real sampler, harness and chat template with a known
// policy: a Backend whose Sample returns the script's next token (with its
// log-prob under the model's logits) instead of drawing one.
package scripted

import (
	"fmt"
	"math"
	"sync"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/tokenizer"
)

// Backend is a kernels.Backend that samples from a script. Every row of a
// Sample call gets the same next token, so all sequences of a batch must
// play the script in step (one episode, or episodes with identical
// prompts and replies). Past the script's end it samples the stop token.
type Backend struct {
	kernels.Backend
	mu     sync.Mutex
	tokens []int32
	pos    int
	stop   int32
}

// New wraps inner with a script: turns in order, each encoded with tok and
// ended by the chat format's end-of-turn token (<|im_end|>, <|eot_id|>, or
// harmony's <|return|>), unless the turn's text already ends in one of
// that format's turn ends (a gpt-oss call turn ends in <|call|>).
func New(inner kernels.Backend, tok *tokenizer.Tokenizer, turns ...string) (*Backend, error) {
	var stop int32
	ok := false
	for _, s := range []string{"<|im_end|>", "<|eot_id|>", "<|return|>"} {
		if stop, ok = tok.TokenID(s); ok {
			break
		}
	}
	if !ok {
		return nil, fmt.Errorf("scripted: the tokenizer has none of <|im_end|>, <|eot_id|>, <|return|> to end a turn")
	}
	b := &Backend{Backend: inner, stop: stop}
	for _, t := range turns {
		ids := tok.Encode(t)
		if n := len(ids); n > 0 {
			if s, _ := tok.Token(ids[n-1]); ids[n-1] == stop || s == "<|call|>" {
				b.tokens = append(b.tokens, ids...)
				continue
			}
		}
		b.tokens = append(append(b.tokens, ids...), stop)
	}
	return b, nil
}

// Played reports how many scripted tokens were sampled.
func (b *Backend) Played() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pos
}

// Sample writes the script's next token into every row, with its log-prob
// under the row's raw logits (log-softmax at temperature 1, as the
// sampler reports for drawn tokens).
func (b *Backend) Sample(token, logprob, logits kernels.Buffer, rows, vocab int, u []float64, p []kernels.SampleParams) {
	b.mu.Lock()
	next := b.stop
	if b.pos < len(b.tokens) {
		next = b.tokens[b.pos]
		b.pos++
	}
	b.mu.Unlock()
	host := make([]float32, rows*vocab)
	b.Download(host, logits)
	if err := b.Sync(); err != nil {
		panic(fmt.Sprintf("scripted: reading logits: %v", err))
	}
	toks, lps := make([]int32, rows), make([]float32, rows)
	for r := range rows {
		row := host[r*vocab : (r+1)*vocab]
		mx := math.Inf(-1)
		for _, x := range row {
			mx = math.Max(mx, float64(x))
		}
		sum := 0.0
		for _, x := range row {
			sum += math.Exp(float64(x) - mx)
		}
		toks[r], lps[r] = next, float32(float64(row[next])-mx-math.Log(sum))
	}
	b.UploadI32(token, toks)
	b.Upload(logprob, lps)
}
