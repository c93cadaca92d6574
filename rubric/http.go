package rubric

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// HTTPConfig describes a reward server: each rollout is POSTed to URL as the
// JSON request object and the response body is the reply (see wire.go), so a
// reward function written in Python can stay loaded between rollouts.
type HTTPConfig struct {
	URL string
	// Timeout bounds one request, connection included (default 30 s).
	Timeout time.Duration
	// Headers are added to every request (e.g. an Authorization token).
	Headers map[string]string
	// MaxBody caps the response body in bytes (default 1 MiB).
	MaxBody int64
	// Client, if set, sends the requests (default http.DefaultClient).
	Client *http.Client
}

// HTTP returns a reward function that asks cfg's server. A non-2xx status,
// a timeout, an oversized body or a reply that is not a reward makes the Func
// return an error naming the cause.
func HTTP(cfg HTTPConfig) (Func, error) {
	if err := checkURL(cfg.URL); err != nil {
		return nil, fmt.Errorf("rubric: http rubric url: %v", err)
	}
	if cfg.Timeout < 0 || cfg.MaxBody < 0 {
		return nil, fmt.Errorf("rubric: http rubric %s has negative timeout %v or max body %d", cfg.URL, cfg.Timeout, cfg.MaxBody)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = defaultTimeout
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = defaultMaxOutput
	}
	if cfg.Client == nil {
		cfg.Client = http.DefaultClient
	}
	return func(ctx context.Context, r Rollout) (Score, error) {
		payload, err := encodeRollout(r)
		if err != nil {
			return Score{}, err
		}
		body, err := postJSON(ctx, cfg.Client, cfg.URL, cfg.Headers, payload, cfg.Timeout, cfg.MaxBody)
		if err != nil {
			return Score{}, err
		}
		s, err := parseReply(body)
		if err != nil {
			return Score{}, fmt.Errorf("%s: %v", cfg.URL, err)
		}
		return s, nil
	}, nil
}

func checkURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return errors.New(`empty; give e.g. "http://127.0.0.1:8000/reward"`)
	case err != nil:
		return fmt.Errorf("%q: %v", raw, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q: scheme must be http or https", raw)
	case u.Host == "":
		return fmt.Errorf("%q has no host", raw)
	}
	return nil
}

// postJSON POSTs payload and returns the body of a 2xx response, reading at
// most maxBody bytes; errors are one line and name the URL.
func postJSON(ctx context.Context, client *http.Client, url string, headers map[string]string, payload []byte, timeout time.Duration, maxBody int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return nil, fmt.Errorf("%s: no reply within %v", url, timeout)
		}
		return nil, fmt.Errorf("%s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return nil, fmt.Errorf("%s: reply not finished within %v", url, timeout)
		}
		return nil, fmt.Errorf("%s: reading reply: %v", url, err)
	}
	if int64(len(body)) > maxBody {
		return nil, fmt.Errorf("%s: reply longer than %d bytes", url, maxBody)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s: HTTP %s: %s", url, resp.Status, preview(body))
	}
	return body, nil
}
