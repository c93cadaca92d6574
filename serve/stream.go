package serve

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// sse writes server-sent events: "data: <json>\n\n" per event, flushed at
// once, and "data: [DONE]\n\n" at the end, as OpenAI's streams do.
type sse struct {
	w   http.ResponseWriter
	f   http.Flusher
	buf bytes.Buffer
	err error
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (s *sse) send(v any) error {
	if s.err != nil {
		return s.err
	}
	s.buf.Reset()
	s.buf.WriteString("data: ")
	enc := json.NewEncoder(&s.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		s.err = err
		return err
	}
	s.buf.WriteString("\n")
	return s.flush()
}

func (s *sse) flush() error {
	if _, err := s.w.Write(s.buf.Bytes()); err != nil {
		s.err = err
		return err
	}
	if s.f != nil {
		s.f.Flush()
	}
	return nil
}

// fail sends an error object as an event: once a stream has begun its
// status is 200, so a late failure travels in the stream (vLLM does the
// same).
func (s *sse) fail(e *apiError) {
	s.send(map[string]any{"error": map[string]any{"message": e.message, "type": errorType(e.status), "param": nil, "code": e.status}})
}

func (s *sse) done() {
	if s.err == nil {
		s.buf.Reset()
		s.buf.WriteString("data: [DONE]\n\n")
		s.flush()
	}
}
