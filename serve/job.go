package serve

import (
	"context"
	"sync"

	"github.com/grpo-dev/grpo/sampler"
)

// job is one request's generation: n choices from one prompt under one
// adapter. The scheduler goroutine writes its outputs; the HTTP handler
// reads them after each notification.
type job struct {
	ctx     context.Context
	adapter *adapterRef // nil: the base model
	prompt  []int32
	params  []sampler.Params // one per choice
	// promptTop < 0: no prompt log-probs; else score the prompt (echo)
	// with that many alternatives per token.
	promptTop int

	notify chan struct{} // capacity 1: "something changed"
	// stream is true when the handler sends tokens as they come; a whole
	// response is woken only when the job ends, not at every step.
	stream bool

	mu       sync.Mutex
	outs     []output
	promptLP []float32
	promptTL [][]sampler.TokenLogprob
	done     bool
	err      error
}

// output is one choice's tokens so far.
type output struct {
	Tokens   []int32
	Logprobs []float32
	Top      [][]sampler.TokenLogprob
	// Finish is "" while generating, then sampler.FinishStop or
	// FinishLength.
	Finish     string
	StopToken  bool
	StopString string
}

func newJob(ctx context.Context, ad *adapterRef, prompt []int32, params []sampler.Params, promptTop int) *job {
	return &job{ctx: ctx, adapter: ad, prompt: prompt, params: params, promptTop: promptTop,
		notify: make(chan struct{}, 1), outs: make([]output, len(params))}
}

func (j *job) signal() {
	select {
	case j.notify <- struct{}{}:
	default:
	}
}

// publish copies what choice i's sequence generated since the last call.
func (j *job) publish(i int, t *sampler.Turn, finished bool) {
	j.mu.Lock()
	o := &j.outs[i]
	n := len(o.Tokens)
	o.Tokens = append(o.Tokens, t.Tokens[n:]...)
	o.Logprobs = append(o.Logprobs, t.Logprobs[n:]...)
	if len(t.TopLogprobs) > n {
		o.Top = append(o.Top, t.TopLogprobs[n:]...)
	}
	if finished {
		o.Finish, o.StopToken, o.StopString = t.FinishReason, t.StopToken, t.StopString
	}
	j.mu.Unlock()
}

// finish ends the job (err nil: every choice finished).
func (j *job) finish(err error) {
	j.mu.Lock()
	if !j.done {
		j.done, j.err = true, err
	}
	j.mu.Unlock()
	j.signal()
}

// snapshot is a copy of the job's state for the handler: the outputs'
// slices are shared but only ever appended to under mu, so the copied
// headers stay valid.
func (j *job) snapshot() (outs []output, done bool, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]output(nil), j.outs...), j.done, j.err
}
