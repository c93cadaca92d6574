package rollout

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"

	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/sampler"
)

// serverRunner is turnRunner over an OpenAI-compatible server's
// completions API: each turn is one request whose prompt is the
// sequence's token ids so far (token in) and whose reply carries the
// sampled ids and their raw log-probs (return_token_ids, logprobs = 0).
// It keeps a sampler's limits — a slot of maxLen tokens, max_tokens
// capped by the room left, the same stop tokens — so an episode ends
// where Local's would.
type serverRunner struct {
	c      *endpoints.Client
	model  string // the request's model: an adapter's name or the base model's ("": the endpoint's)
	maxLen int
	vocab  int
}

// serverSeq is one episode's sequence on the server.
type serverSeq struct {
	params sampler.Params
	tokens []int32
	maxLen int
	vocab  int
	turn   sampler.Turn
	failed error
}

func (q *serverSeq) Last() *sampler.Turn { return &q.turn }
func (q *serverSeq) Failed() error       { return q.failed }
func (q *serverSeq) Room() int           { return q.maxLen - len(q.tokens) }
func (q *serverSeq) Reseed(seed uint64)  { q.params.Seed = seed }

// Experts is nil: a server's rollouts carry no routing, and are routed
// afresh in training.
func (q *serverSeq) Experts() []int32 { return nil }

// Append adds an environment reply, refusing what the sampler refuses.
func (q *serverSeq) Append(tokens ...int32) error {
	if len(tokens) > q.Room() {
		return fmt.Errorf("appending %d tokens to a sequence of %d exceeds the cache length %d; shorten the environment's replies", len(tokens), len(q.tokens), q.maxLen)
	}
	for i, t := range tokens {
		if t < 0 || int(t) >= q.vocab {
			return fmt.Errorf("appended token %d (index %d) is outside the model's vocabulary of %d", t, i, q.vocab)
		}
	}
	q.tokens = append(q.tokens, tokens...)
	return nil
}

// CanStart is always true: every episode starts at once, and the
// client's concurrency limit bounds the requests in flight.
func (r *serverRunner) CanStart(promptLen, n int) bool { return true }

// StartGroup starts each sequence as Start does; the server shares the
// prompt as it sees fit (grpo serve's own sampler, vLLM's prefix cache).
func (r *serverRunner) StartGroup(prompt []int32, params []sampler.Params) ([]turnSeq, error) {
	out := make([]turnSeq, 0, len(params))
	for _, p := range params {
		q, err := r.Start(prompt, p)
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}

func (r *serverRunner) Start(prompt []int32, p sampler.Params) (turnSeq, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	switch {
	case len(prompt) == 0:
		return nil, fmt.Errorf("empty prompt: a sequence needs at least one token to condition on")
	case len(prompt) >= r.maxLen:
		return nil, fmt.Errorf("prompt of %d tokens leaves no room in the sequence length %d (prompt + [sampling] max_tokens per turn, capped at the model's max_position_embeddings); shorten the prompt", len(prompt), r.maxLen)
	}
	for i, t := range prompt {
		if t < 0 || int(t) >= r.vocab {
			return nil, fmt.Errorf("prompt token %d (index %d) is outside the model's vocabulary of %d", t, i, r.vocab)
		}
	}
	return &serverSeq{params: p, tokens: slices.Clone(prompt), maxLen: r.maxLen, vocab: r.vocab}, nil
}

func (r *serverRunner) Release(turnSeq) {}

// Run sends one request per sequence, all at once. A refused request
// (400, 422, or a 5xx after the client's retries) fails its episode only;
// an unreachable server, a refused key, an unknown model or a reply
// without token ids fails them all alike, so Run returns it.
func (r *serverRunner) Run(ctx context.Context, seqs []turnSeq) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var fatal error
	for _, s := range seqs {
		q := s.(*serverSeq)
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := r.turn(rctx, q)
			if err == nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case isFatal(err):
				if fatal == nil {
					fatal = err
					cancel() // the other requests would fail alike
				}
			case fatal == nil:
				q.failed = err
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err // cancelled by the caller: say so, not how the requests ended
	}
	var ee *endpoints.Error
	if errors.As(fatal, &ee) && ee.Status == 0 {
		return fmt.Errorf("%w; the inference server does not answer: start it again (grpo serve MODEL, or vLLM as docs/inference.md says) and resume the run", fatal)
	}
	return fatal
}

// isFatal tells the errors every request would get alike from the ones
// of one request.
func isFatal(err error) bool {
	var ee *endpoints.Error
	if !errors.As(err, &ee) {
		return true // a malformed reply: the server is not one that can generate rollouts
	}
	switch ee.Status {
	case 0, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		return true
	}
	return false
}

// turn generates q's next turn into q.turn.
func (r *serverRunner) turn(ctx context.Context, q *serverSeq) error {
	q.turn, q.failed = sampler.Turn{}, nil
	room := q.Room()
	if room <= 0 {
		q.turn = sampler.Turn{FinishReason: sampler.FinishLength, CacheFull: true}
		return nil
	}
	p := q.params
	maxTokens := room
	if p.MaxTokens > 0 {
		maxTokens = min(maxTokens, p.MaxTokens)
	}
	zero := 0
	seed := endpoints.Seed(p.Seed)
	req := &endpoints.CompletionRequest{Model: r.model, Prompt: q.tokens, MaxTokens: &maxTokens, Temperature: &p.Temperature,
		Stop: p.Stop, Seed: &seed, Logprobs: &zero, ReturnTokenIDs: true, StopTokenIDs: p.StopTokens}
	if p.TopP != 1 {
		req.TopP = &p.TopP
	}
	if p.TopK > 0 {
		req.TopK = &p.TopK
	}
	if p.MinP > 0 {
		req.MinP = &p.MinP
	}
	resp, err := r.c.Completion(ctx, req)
	if err != nil {
		return err
	}
	ch := resp.Choices[0]
	toks := ch.TokenIDs
	if len(toks) == 0 {
		return fmt.Errorf("endpoint %s returned no token ids; rollouts need a server that returns them (return_token_ids: vLLM or grpo serve)", r.c.Where())
	}
	if ch.Logprobs == nil || len(ch.Logprobs.TokenLogprobs) != len(toks) {
		n := 0
		if ch.Logprobs != nil {
			n = len(ch.Logprobs.TokenLogprobs)
		}
		return fmt.Errorf("endpoint %s returned %d token ids and %d log-probs; rollouts need one log-prob per token (logprobs: 0 on vLLM or grpo serve)", r.c.Where(), len(toks), n)
	}
	if len(toks) > maxTokens {
		return fmt.Errorf("endpoint %s returned %d tokens for max_tokens = %d", r.c.Where(), len(toks), maxTokens)
	}
	lps := make([]float32, len(toks))
	for i, lp := range ch.Logprobs.TokenLogprobs {
		if lp == nil {
			return fmt.Errorf("endpoint %s returned no log-prob for token %d", r.c.Where(), i)
		}
		// A log-prob is finite and ≤ 0 (log_softmax's normaliser is at
		// least the top logit's); anything else would enter the loss as
		// the behaviour policy and train on garbage.
		if v := *lp; v > 1e-6 || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("endpoint %s returned log-prob %v for token %d (id %d); a log-prob is finite and ≤ 0: the server's sampling is broken or it is not a log-prob", r.c.Where(), v, i, toks[i])
		}
		lps[i] = float32(*lp)
	}
	for _, t := range toks {
		if t < 0 || int(t) >= q.vocab {
			return fmt.Errorf("endpoint %s returned token %d, outside the trainer's model's vocabulary of %d; is the server serving the same model?", r.c.Where(), t, q.vocab)
		}
	}
	q.tokens = append(q.tokens, toks...)
	q.turn = sampler.Turn{Tokens: toks, Logprobs: lps, FinishReason: ch.FinishReason}
	switch ch.FinishReason {
	case sampler.FinishStop:
		q.turn.StopToken = slices.Contains(p.StopTokens, toks[len(toks)-1])
	case sampler.FinishLength:
		// The sampler checks max_tokens before the end of the slot.
		q.turn.CacheFull = len(toks) == room && !(p.MaxTokens > 0 && len(toks) >= p.MaxTokens)
	default:
		return fmt.Errorf("endpoint %s: finish_reason %q; want \"stop\" or \"length\"", r.c.Where(), ch.FinishReason)
	}
	return nil
}
