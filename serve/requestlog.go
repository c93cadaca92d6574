package serve

import (
	"context"
	"net/http"
	"time"
)

// requestLog wraps h so each request ends with one line through Logf, as
// vLLM's access log prints it, plus what a server operator counts:
//
//	127.0.0.1:52314 "POST /v1/chat/completions HTTP/1.1" 200 prompt_tokens=12 completion_tokens=16 41.2ms
//
// The path is the escaped request URI, so a client cannot forge a line.
func (s *Server) requestLog(h http.Handler) http.Handler {
	if s.cfg.Logf == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		toks := &tokenCounts{}
		h.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), tokenCountsKey{}, toks)))
		line := "%s \"%s %s %s\" %d"
		args := []any{r.RemoteAddr, r.Method, r.URL.RequestURI(), r.Proto, rec.status}
		if toks.set {
			line += " prompt_tokens=%d completion_tokens=%d"
			args = append(args, toks.prompt, toks.completion)
		}
		s.logf(line+" %s", append(args, time.Since(start).Round(100*time.Microsecond))...)
	})
}

// tokenCounts are what a generation request reports to its log line.
type tokenCounts struct {
	set                bool
	prompt, completion int
}

type tokenCountsKey struct{}

// countTokens records a request's usage for its log line.
func countTokens(r *http.Request, prompt, completion int) {
	if t, ok := r.Context().Value(tokenCountsKey{}).(*tokenCounts); ok {
		*t = tokenCounts{set: true, prompt: prompt, completion: completion}
	}
}

// statusWriter remembers the status; Unwrap lets http.ResponseController
// reach Flush and SetReadDeadline of the writer beneath.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
