package endpoints

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/chat"
)

const secret = "sk-test-0123456789abcdef"

func env(name string) string {
	if name == "TEST_KEY" {
		return secret
	}
	return ""
}

// okChat answers a chat completion naming the model it was asked for.
func okChat(w http.ResponseWriter, r *http.Request) {
	var req ChatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	text := "hi from " + req.Model
	json.NewEncoder(w).Encode(ChatResponse{ID: "c1", Model: req.Model, Choices: []ChatChoice{{Message: ChatMessage{Role: "assistant", Content: &text}, FinishReason: "stop"}}})
}

func client(t *testing.T, o Options, urls ...string) *Client {
	t.Helper()
	var eps []Endpoint
	for _, u := range urls {
		eps = append(eps, Endpoint{ID: "ep", Model: "m-" + u[len(u)-5:], URL: u + "/v1", KeyVar: "TEST_KEY", Type: TypeChat})
	}
	o.Getenv = env
	c, err := New(eps, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ask(c *Client) (*ChatResponse, error) {
	return c.Chat(context.Background(), &ChatRequest{Messages: []chat.Message{{Role: "user", Content: "hello"}}})
}

// TestChatSendsKeyHeadersAndModel: the request carries the key as a
// bearer token, the endpoint's headers, and the replica's model name.
func TestChatSendsKeyHeadersAndModel(t *testing.T) {
	var auth, team, path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, team, path = r.Header.Get("Authorization"), r.Header.Get("X-Team"), r.URL.Path
		okChat(w, r)
	}))
	defer srv.Close()
	c, err := New([]Endpoint{{ID: "ep", Model: "gpt-x", URL: srv.URL + "/v1/", KeyVar: "TEST_KEY", Headers: map[string]string{"X-Team": "t1"}}}, Options{Getenv: env})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := ask(c)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "Bearer "+secret || team != "t1" || path != "/v1/chat/completions" {
		t.Errorf("auth %q team %q path %q", auth, team, path)
	}
	if got := resp.Choices[0].Message.Text(); got != "hi from gpt-x" {
		t.Errorf("reply %q", got)
	}
}

// TestReplicasShareTheLoad: sequential requests alternate between two
// replicas of one id.
func TestReplicasShareTheLoad(t *testing.T) {
	var hits [2]atomic.Int32
	var srvs [2]*httptest.Server
	for i := range srvs {
		srvs[i] = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits[i].Add(1)
			okChat(w, r)
		}))
		defer srvs[i].Close()
	}
	c := client(t, Options{}, srvs[0].URL, srvs[1].URL)
	for range 6 {
		if _, err := ask(c); err != nil {
			t.Fatal(err)
		}
	}
	if hits[0].Load() != 3 || hits[1].Load() != 3 {
		t.Errorf("hits %d and %d, want 3 each", hits[0].Load(), hits[1].Load())
	}
}

// TestRetriesHonourRetryAfter: a 429 asking for 7 s and a 503 are
// retried; the waits are the backoff or Retry-After, capped.
func TestRetriesHonourRetryAfter(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(429)
			io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit"}}`)
		case 2:
			w.WriteHeader(503)
		case 3:
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(429)
		default:
			okChat(w, r)
		}
	}))
	defer srv.Close()
	var waits []time.Duration
	var logs []string
	c := client(t, Options{Backoff: time.Second, MaxBackoff: 30 * time.Second,
		Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil },
		Logf:  func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }}, srv.URL)
	if _, err := ask(c); err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{7 * time.Second, 2 * time.Second, 30 * time.Second}
	if fmt.Sprint(waits) != fmt.Sprint(want) {
		t.Errorf("waits %v, want %v", waits, want)
	}
	if len(logs) != 3 || !strings.Contains(logs[0], "HTTP 429") || !strings.Contains(logs[0], "slow down") {
		t.Errorf("logs %q", logs)
	}
}

// TestErrorsNameEndpointAndStatusNeverTheKey: a server that echoes the
// Authorization header in its error body must not put the key into the
// error or the retry log; a 400 is not retried.
func TestErrorsNameEndpointAndStatusNeverTheKey(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		status := 500
		if strings.Contains(r.URL.RawQuery, "bad") || n.Load() > 3 {
			status = 400
		}
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"bad auth header %s"}}`, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	var logs strings.Builder
	c := client(t, Options{MaxRetries: 2, Sleep: func(context.Context, time.Duration) error { return nil },
		Logf: func(f string, a ...any) { fmt.Fprintf(&logs, f+"\n", a...) }}, srv.URL)
	_, err := ask(c)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, want := range []string{"endpoint ep", srv.URL + "/v1/chat/completions", "HTTP 500", "after 3 attempts", "[key redacted]"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, secret) || strings.Contains(logs.String(), secret) {
		t.Errorf("the key leaked:\nerror %s\nlogs %s", msg, logs.String())
	}
	if logs.Len() == 0 {
		t.Error("no retry was logged")
	}
	n.Store(10) // now every answer is a 400
	before := n.Load()
	_, err = ask(c)
	if err == nil || !strings.Contains(err.Error(), "HTTP 400") || n.Load() != before+1 {
		t.Errorf("a 400 was retried or misreported (%d requests): %v", n.Load()-before, err)
	}
}

// TestUnsetKeyIsNamed: a 401 says which variable is unset (and not what a
// key would be).
func TestUnsetKeyIsNamed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			t.Error("an Authorization header was sent without a key")
		}
		w.WriteHeader(401)
	}))
	defer srv.Close()
	c, err := New([]Endpoint{{ID: "hosted", Model: "m", URL: srv.URL, KeyVar: "MISSING_KEY"}}, Options{Getenv: env})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ask(c)
	if err == nil || !strings.Contains(err.Error(), "MISSING_KEY is not set") || !strings.Contains(err.Error(), "HTTP 401") {
		t.Errorf("error: %v", err)
	}
}

// TestConcurrencyLimit: with MaxConcurrent 2, no more than two requests
// reach the server at once. The server holds each request until the test
// lets one go, so a third would arrive while two are held if the limit
// failed.
func TestConcurrencyLimit(t *testing.T) {
	var mu sync.Mutex
	in, peak := 0, 0
	entered := make(chan struct{}, 8)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		in++
		peak = max(peak, in)
		mu.Unlock()
		entered <- struct{}{}
		<-release
		mu.Lock()
		in--
		mu.Unlock()
		okChat(w, r)
	}))
	defer srv.Close()
	c := client(t, Options{MaxConcurrent: 2}, srv.URL)
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := ask(c); err != nil {
				t.Error(err)
			}
		}()
	}
	for range 6 {
		<-entered
		release <- struct{}{}
	}
	wg.Wait()
	if peak > 2 {
		t.Errorf("%d requests in flight at once, limit 2", peak)
	}
}

// TestCancelledIsNotRetried: the caller's cancellation ends the request.
func TestCancelledIsNotRetried(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(503)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	c := client(t, Options{Sleep: func(context.Context, time.Duration) error { cancel(); return context.Canceled }}, srv.URL)
	_, err := c.Chat(ctx, &ChatRequest{})
	if err == nil || n.Load() != 1 {
		t.Errorf("%d requests, error %v", n.Load(), err)
	}
}
