package endpoints

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// Options tune a Client. The zero value is usable.
type Options struct {
	// MaxConcurrent bounds the requests in flight over all replicas; 0
	// means 32.
	MaxConcurrent int
	// Timeout bounds one attempt, connection to last byte; 0 means 10
	// minutes (a long generation on a busy server).
	Timeout time.Duration
	// MaxRetries is how many times a request is retried after a 429, a
	// 5xx or a failed connection; 0 means 4, negative means none.
	MaxRetries int
	// Backoff is the first retry's wait, doubled per retry up to
	// MaxBackoff; 0 means 500 ms.
	Backoff time.Duration
	// MaxBackoff caps each wait, Retry-After included; 0 means 60 s.
	MaxBackoff time.Duration
	// HTTPClient sends the requests (nil: a client of its own).
	HTTPClient *http.Client
	// Logf, if set, hears each retry (endpoint, status, wait), never the
	// key.
	Logf func(format string, args ...any)
	// Getenv reads the key variables (nil: os.Getenv).
	Getenv func(string) string
	// Sleep waits between retries (nil: a timer that ctx cancels); tests
	// record the waits instead of spending them.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Client sends requests to the replicas of one endpoint id. It is safe for
// concurrent use.
type Client struct {
	id       string
	replicas []*replica
	o        Options
	sem      chan struct{}
	mu       sync.Mutex
	next     int // round-robin start among equally loaded replicas
}

type replica struct {
	ep       Endpoint
	auth     string // "Bearer <key>", or "" for none
	keyUnset bool   // KeyVar names a variable that is empty
	inFlight int
}

// New makes a client over eps, the replicas of one endpoint id. The keys
// are read from the environment now.
func New(eps []Endpoint, o Options) (*Client, error) {
	if len(eps) == 0 {
		return nil, errors.New("endpoints: no endpoint given")
	}
	if o.MaxConcurrent == 0 {
		o.MaxConcurrent = 32
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Minute
	}
	switch {
	case o.MaxRetries == 0:
		o.MaxRetries = 4
	case o.MaxRetries < 0:
		o.MaxRetries = 0
	}
	if o.Backoff == 0 {
		o.Backoff = 500 * time.Millisecond
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = time.Minute
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Sleep == nil {
		o.Sleep = sleepCtx
	}
	if o.MaxConcurrent < 1 || o.Timeout < 0 || o.Backoff < 0 || o.MaxBackoff < 0 {
		return nil, fmt.Errorf("endpoints: max_concurrent %d, timeout %v and backoff %v must not be negative", o.MaxConcurrent, o.Timeout, o.Backoff)
	}
	c := &Client{id: eps[0].ID, o: o, sem: make(chan struct{}, o.MaxConcurrent)}
	for _, ep := range eps {
		if ep.ID != c.id {
			return nil, fmt.Errorf("endpoints: replicas of %q include endpoint %q", c.id, ep.ID)
		}
		r := &replica{ep: ep}
		if ep.KeyVar != "" {
			if key := o.Getenv(ep.KeyVar); key != "" {
				r.auth = "Bearer " + key
			} else {
				r.keyUnset = true
			}
		}
		c.replicas = append(c.replicas, r)
	}
	return c, nil
}

// ID is the endpoint id.
func (c *Client) ID() string { return c.id }

// Where names the endpoint with its replicas' URLs, "id (url, …)", for
// messages about what a server sent: an id alone ([inference] url's is
// "inference") does not say which server to look at.
func (c *Client) Where() string {
	urls := make([]string, len(c.replicas))
	for i, r := range c.replicas {
		urls[i] = strings.TrimRight(r.ep.URL, "/")
	}
	return fmt.Sprintf("%s (%s)", c.id, strings.Join(urls, ", "))
}

// Model is the first replica's model name, the one requests default to.
func (c *Client) Model() string { return c.replicas[0].ep.Model }

// Type is the first replica's client type.
func (c *Client) Type() string { return c.replicas[0].ep.Type }

// Chat sends a chat completion. An empty Model is each replica's own.
func (c *Client) Chat(ctx context.Context, req *ChatRequest) (*ChatResponse, error) {
	var resp ChatResponse
	err := c.do(ctx, "/chat/completions", func(model string) any {
		r := *req
		if r.Model == "" {
			r.Model = model
		}
		return &r
	}, &resp)
	if err != nil {
		return nil, err
	}
	if len(resp.Choices) == 0 {
		return nil, fmt.Errorf("endpoint %s: the chat completion has no choices", c.id)
	}
	return &resp, nil
}

// Completion sends a text completion. An empty Model is each replica's own.
func (c *Client) Completion(ctx context.Context, req *CompletionRequest) (*CompletionResponse, error) {
	var resp CompletionResponse
	err := c.do(ctx, "/completions", func(model string) any {
		r := *req
		if r.Model == "" {
			r.Model = model
		}
		return &r
	}, &resp)
	if err != nil {
		return nil, err
	}
	if len(resp.Choices) == 0 {
		return nil, fmt.Errorf("endpoint %s: the completion has no choices", c.id)
	}
	return &resp, nil
}

// pick takes the replica with the fewest requests in flight, rotating
// among ties so that equal replicas share the load.
func (c *Client) pick(avoid *replica) *replica {
	c.mu.Lock()
	defer c.mu.Unlock()
	var best *replica
	n := len(c.replicas)
	for k := range n {
		r := c.replicas[(c.next+k)%n]
		if r == avoid && n > 1 {
			continue
		}
		if best == nil || r.inFlight < best.inFlight {
			best = r
		}
	}
	c.next = (c.next + 1) % n
	best.inFlight++
	return best
}

func (c *Client) done(r *replica) {
	c.mu.Lock()
	r.inFlight--
	c.mu.Unlock()
}

// do POSTs the body made for a replica's model to path and decodes the
// 2xx reply into out, retrying as Options say, on another replica when
// there is one.
func (c *Client) do(ctx context.Context, path string, body func(model string) any, out any) error {
	if err := c.acquire(ctx); err != nil {
		return err
	}
	defer c.release()
	var last *replica
	return c.withRetries(ctx, func() (time.Duration, error) {
		r := c.pick(last)
		last = r
		defer c.done(r)
		payload, err := json.Marshal(body(r.ep.Model))
		if err != nil {
			return 0, fmt.Errorf("endpoint %s: encoding the request: %v", c.id, err)
		}
		status, retryAfter, data, err := c.attempt(ctx, r, http.MethodPost, path, payload)
		if err != nil {
			return retryAfter, err
		}
		if err := json.Unmarshal(data, out); err != nil {
			return 0, c.errorf(r, path, status, "the reply is not the JSON expected (%v): %s", err, preview(data))
		}
		return 0, nil
	})
}

// acquire takes one of the MaxConcurrent request slots; release gives it
// back.
func (c *Client) acquire(ctx context.Context) error {
	select {
	case c.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("endpoint %s: waiting for a free request slot: %w", c.id, ctx.Err())
	}
}

func (c *Client) release() { <-c.sem }

// withRetries calls try until it succeeds, fails for good (an error that
// is not a retryable *Error, or ctx done), or MaxRetries retries are
// spent, waiting between tries with exponential backoff or at least the
// Retry-After try reports, up to MaxBackoff.
func (c *Client) withRetries(ctx context.Context, try func() (retryAfter time.Duration, err error)) error {
	for attempt := 0; ; attempt++ {
		retryAfter, err := try()
		if err == nil {
			return nil
		}
		var e *Error
		retryable := errors.As(err, &e) && e.retryable
		if !retryable || attempt >= c.o.MaxRetries || ctx.Err() != nil {
			if e != nil && attempt > 0 {
				e.Attempts = attempt + 1
			}
			return err
		}
		wait := min(c.o.Backoff<<attempt, c.o.MaxBackoff)
		if retryAfter > wait {
			wait = min(retryAfter, c.o.MaxBackoff)
		}
		if c.o.Logf != nil {
			c.o.Logf("endpoint %s: %s; retry %d of %d in %v", c.id, e.short(), attempt+1, c.o.MaxRetries, wait)
		}
		if err := c.o.Sleep(ctx, wait); err != nil {
			return fmt.Errorf("%v (then cancelled while waiting to retry)", e)
		}
	}
}

// attempt sends one request (payload nil: none, as for a GET); a non-nil error is an *Error, retryable
// for 429, 5xx and transport failures other than ctx's.
func (c *Client) attempt(ctx context.Context, r *replica, method, path string, payload []byte) (int, time.Duration, []byte, error) {
	actx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	url := strings.TrimRight(r.ep.URL, "/") + path
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(actx, method, url, body)
	if err != nil {
		return 0, 0, nil, c.errorf(r, path, 0, "%v", err)
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.ep.Headers {
		req.Header.Set(k, v)
	}
	if r.auth != "" {
		req.Header.Set("Authorization", r.auth)
	}
	resp, err := c.o.HTTPClient.Do(req)
	if err != nil {
		e := c.transportError(r, path, err)
		// Connection failures and attempt timeouts are retried; the
		// caller's own cancellation is not.
		e.retryable = ctx.Err() == nil
		return 0, 0, nil, e
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		e := c.errorf(r, path, resp.StatusCode, "reading the reply: %v", err)
		e.retryable = ctx.Err() == nil
		return resp.StatusCode, 0, nil, e
	}
	if resp.StatusCode/100 == 2 {
		return resp.StatusCode, 0, data, nil
	}
	e := c.errorf(r, path, resp.StatusCode, "%s", serverMessage(data))
	e.retryable = resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		switch {
		case r.keyUnset:
			e.Message += fmt.Sprintf(" (the key variable %s is not set)", r.ep.KeyVar)
		case r.ep.KeyVar == "":
			e.Message += " (the endpoint has no key = \"VAR\")"
		}
	}
	return resp.StatusCode, retryAfterOf(resp.Header.Get("Retry-After")), nil, e
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
