package serve

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// Request bodies are read within bounds: at most maxBody bytes, within
// bodyTimeout. Decoding, rendering and checking a body cost a few times
// its size, so bodies beyond smallBody share a budget of bigBodies bytes:
// 64 clients sending 16 MB prompts hold at most bigBodies in flight, and a
// small (valid) request never waits for it.
const (
	maxBody            = 16 << 20
	smallBody          = 256 << 10
	bigBodies          = 2 * maxBody
	bodyTimeoutDefault = 30 * time.Second
)

// bodyTimeout is a var so a test can shorten it. The deadline ends with
// the body: net/http clears it when it starts watching the idle connection
// after the body's end (TestBodyDeadlineEndsWithTheBody).
var bodyTimeout = bodyTimeoutDefault

// budget is a byte semaphore.
type budget struct {
	mu   sync.Mutex
	free int64
	wake chan struct{} // closed (and replaced) at each release
}

func newBudget(n int64) *budget { return &budget{free: n, wake: make(chan struct{})} }

func (b *budget) acquire(ctx context.Context, n int64) error {
	for {
		b.mu.Lock()
		if b.free >= n {
			b.free -= n
			b.mu.Unlock()
			return nil
		}
		wake := b.wake
		b.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (b *budget) release(n int64) {
	b.mu.Lock()
	b.free += n
	close(b.wake)
	b.wake = make(chan struct{})
	b.mu.Unlock()
}

// readBody reads r's body within the bounds above. A big body's share of
// the budget is held until the handler returns (r's context ends then),
// since the decoded request lives that long.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	if r.ContentLength > maxBody {
		return nil, tooLarge()
	}
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyTimeout))
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, io.LimitReader(r.Body, smallBody+1)); err != nil {
		return nil, badRequest("", "reading the request body: %v", err)
	}
	if buf.Len() <= smallBody {
		return buf.Bytes(), nil
	}
	need := int64(maxBody)
	if r.ContentLength > 0 {
		need = r.ContentLength
	}
	if err := s.bodies.acquire(r.Context(), need); err != nil {
		return nil, &apiError{status: http.StatusServiceUnavailable, message: "the server is busy with other large requests; retry later"}
	}
	context.AfterFunc(r.Context(), func() { s.bodies.release(need) })
	buf.Grow(int(need) - buf.Len() + 1)
	if _, err := io.Copy(&buf, io.LimitReader(r.Body, need-int64(buf.Len())+1)); err != nil {
		return nil, badRequest("", "reading the request body: %v", err)
	}
	if buf.Len() > maxBody || int64(buf.Len()) > need {
		return nil, tooLarge()
	}
	return buf.Bytes(), nil
}

func tooLarge() *apiError {
	return &apiError{status: http.StatusRequestEntityTooLarge, message: fmt.Sprintf("the request body exceeds %d MiB", maxBody>>20)}
}

// decodeBody reads and decodes r's body into v.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any) *apiError {
	data, e := s.readBody(w, r)
	if e != nil {
		return e
	}
	return decode(data, v)
}
