package endpoints

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Error is a failed request: which endpoint, where, the HTTP status (0
// when no reply came) and why.
type Error struct {
	Endpoint string
	URL      string
	Status   int
	Message  string
	// Attempts is how many tries were made (0 or 1: one).
	Attempts  int
	retryable bool
	cause     error // the transport's error when no reply came
}

// Unwrap is the transport's error (nil when the server replied), so
// errors.Is(err, syscall.ECONNREFUSED) tells a server that is not running.
func (e *Error) Unwrap() error { return e.cause }

// Refused reports a connection the server's host refused: nothing listens
// at the URL, which advice about the server's settings cannot fix.
func (e *Error) Refused() bool { return errors.Is(e.cause, syscall.ECONNREFUSED) }

func (e *Error) Error() string {
	s := fmt.Sprintf("endpoint %s (%s): %s", e.Endpoint, e.URL, e.short())
	if e.Attempts > 1 {
		s += fmt.Sprintf(" (after %d attempts)", e.Attempts)
	}
	return s
}

func (e *Error) short() string {
	if e.Status == 0 {
		return e.Message
	}
	return fmt.Sprintf("HTTP %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// errorf builds an Error with every copy of r's key cut out: a server or a
// transport error may echo the Authorization header back.
func (c *Client) errorf(r *replica, path string, status int, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if key := strings.TrimPrefix(r.auth, "Bearer "); key != "" {
		msg = strings.ReplaceAll(msg, key, "[key redacted]")
	}
	return &Error{Endpoint: c.id, URL: strings.TrimRight(r.ep.URL, "/") + path, Status: status, Message: msg}
}

// transportError is the Error for a request that got no reply: a refused
// connection says so in one line with the endpoint's URL (Go's own text,
// "dial tcp 127.0.0.1:8000: connect: connection refused", reads as a bug
// of grpo's), anything else keeps the transport's words.
func (c *Client) transportError(r *replica, path string, err error) *Error {
	var e *Error
	if errors.Is(err, syscall.ECONNREFUSED) {
		e = c.errorf(r, path, 0, "connection refused at %s: is the server running?", strings.TrimRight(r.ep.URL, "/"))
	} else {
		e = c.errorf(r, path, 0, "%v", err)
	}
	e.cause = err
	return e
}

// serverMessage is the message of an OpenAI error object, or the start of
// the body when it is something else.
func serverMessage(data []byte) string {
	var eb ErrorBody
	if json.Unmarshal(data, &eb) == nil && eb.Error.Message != "" {
		return eb.Error.Message
	}
	// vLLM's older servers answer {"message": ...} or {"detail": ...}.
	var flat struct{ Message, Detail string }
	if json.Unmarshal(data, &flat) == nil && (flat.Message != "" || flat.Detail != "") {
		return flat.Message + flat.Detail
	}
	return preview(data)
}

func preview(data []byte) string {
	s := strings.TrimSpace(string(data))
	if s == "" {
		return "(empty body)"
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strconv.Quote(s)
}

// retryAfterOf reads a Retry-After header: seconds, or an HTTP date.
func retryAfterOf(h string) time.Duration {
	if h == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(h, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(0, time.Until(t))
	}
	return 0
}
