package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/grpo-dev/grpo/sampler"
)

// submit checks the prompt against the cache and queues a job for it;
// the request's context is the job's, so a client that goes away frees
// its slots.
// param names the request's prompt key in errors.
func (s *Server) submit(ctx context.Context, ad *adapterRef, prompt []int32, param string, params []sampler.Params, promptTop int, stream bool) (*job, *apiError) {
	fail := func(e *apiError) (*job, *apiError) {
		ad.release()
		return nil, e
	}
	maxLen, vocab := s.engine.MaxLen(), s.m.Config.VocabSize
	switch {
	case len(prompt) == 0:
		return fail(badRequest(param, "the prompt is empty: give at least one token"))
	case len(prompt) >= maxLen:
		return fail(badRequest(param, "the prompt is %d tokens, and this server's max_model_len is %d (grpo serve --max-len): shorten it", len(prompt), maxLen))
	}
	for i, t := range prompt {
		if t < 0 || int(t) >= vocab {
			return fail(badRequest("prompt", "prompt token %d (index %d) is outside the model's vocabulary of %d", t, i, vocab))
		}
	}
	for i := range params {
		if params[i].MaxTokens == 0 || params[i].MaxTokens > maxLen-len(prompt) {
			params[i].MaxTokens = maxLen - len(prompt)
		}
	}
	j := newJob(ctx, ad, prompt, params, promptTop)
	j.stream = stream
	if err := s.engine.submit(j); err != nil {
		status := http.StatusBadRequest
		switch {
		case errors.Is(err, errQueueFull):
			status = http.StatusTooManyRequests
		case errors.Is(err, errClosed):
			status = http.StatusServiceUnavailable
		}
		return fail(&apiError{status: status, message: err.Error(), param: map[bool]string{true: "n"}[status == http.StatusBadRequest]})
	}
	return j, nil
}

// wait blocks until j finishes or ctx ends.
func wait(ctx context.Context, j *job) ([]output, error) {
	for {
		select {
		case <-j.notify:
			if outs, done, err := j.snapshot(); done {
				return outs, err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// awaitOutputs waits for an unstreamed job's outputs; when it fails it has
// written the error already, unless the client went away (nobody to tell).
func awaitOutputs(w http.ResponseWriter, r *http.Request, j *job) ([]output, bool) {
	outs, err := wait(r.Context(), j)
	if err != nil {
		if r.Context().Err() == nil {
			writeError(w, genError(err))
		}
		return nil, false
	}
	return outs, true
}

// responseModel is the model name a response reports: the request's, or
// the served model's when the request named none.
func (s *Server) responseModel(requested string) string {
	if requested == "" {
		return s.cfg.ModelName
	}
	return requested
}

// genError is the API error for a job that failed.
func genError(err error) *apiError {
	if errors.Is(err, errClosed) {
		return &apiError{status: http.StatusServiceUnavailable, message: err.Error()}
	}
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	return &apiError{status: http.StatusInternalServerError, message: err.Error()}
}

// holdBack is how many trailing bytes of an unfinished choice's text a
// stream must not send yet: the start of a stop string could be there.
func holdBack(stops []string) int {
	h := 0
	for _, st := range stops {
		h = max(h, len(st)-1)
	}
	return h
}

// content is the ids whose text a choice shows: the generated tokens
// without a final stop token.
func content(o *output) []int32 {
	if o.StopToken && len(o.Tokens) > 0 {
		return o.Tokens[:len(o.Tokens)-1]
	}
	return o.Tokens
}

// visible is the text of o to show so far. A finished choice's text ends
// before its stop string (OpenAI's convention); an unfinished one's holds
// back hold bytes and an incomplete UTF-8 character, so streamed pieces
// join into exactly the finished text.
func (s *Server) visible(o *output, hold int) string {
	text := s.tok.Decode(content(o))
	if o.Finish != "" {
		if o.StopString != "" {
			if i := strings.Index(text, o.StopString); i >= 0 {
				text = text[:i]
			}
		}
		return text
	}
	text = text[:max(0, len(text)-hold)]
	return text[:completeUTF8(text)]
}

// completeUTF8 is the length of s without a trailing partial character
// that later bytes could complete.
func completeUTF8(s string) int {
	for k := 1; k <= 3 && k <= len(s); k++ {
		b := s[len(s)-k]
		if b < 0x80 {
			return len(s)
		}
		if b >= 0xC0 { // a leading byte: complete only if its sequence is
			if utf8.FullRuneInString(s[len(s)-k:]) {
				return len(s)
			}
			return len(s) - k
		}
	}
	return len(s)
}

// tokenText is how a token appears in log-prob entries: its raw bytes as
// text.
func (s *Server) tokenText(id int32) string {
	t, _ := s.tok.Token(id)
	return t
}

func bytesOf(t string) []int {
	out := make([]int, len(t))
	for i := 0; i < len(t); i++ {
		out[i] = int(t[i])
	}
	return out
}

func usageOf(prompt []int32, outs []output) (p, c int) {
	for i := range outs {
		c += len(outs[i].Tokens)
	}
	return len(prompt), c
}

func finishOf(o *output) *string {
	if o.Finish == "" {
		return nil
	}
	f := o.Finish
	return &f
}

var errStreamGone = fmt.Errorf("the client went away")
