package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

const (
	maxRedirects = 10
	// maxAttempts bounds tries per request or file transfer; transient
	// failures (5xx, 429, dropped connections, short bodies) are retried.
	maxAttempts = 5
	userAgent   = "grpo/0.1 (+https://github.com/grpo-dev/grpo)"
)

// retryBase is the first backoff wait; it doubles per attempt up to
// retryMax. Tests shrink it.
var (
	retryBase = 500 * time.Millisecond
	retryMax  = 8 * time.Second
)

// client talks to one hub endpoint. It follows redirects itself rather
// than through net/http, for two reasons: the token must reach only the
// endpoint's own scheme://host:port (net/http compares host names without
// ports, and forwards it to any subdomain), and metadata requests must stop
// at the first redirect to another host, whose response carries the
// X-Linked-* headers of an LFS file.
type client struct {
	s        *settings
	http     *http.Client
	endpoint *url.URL
}

func newClient(s *settings) (*client, error) {
	u, err := url.Parse(s.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("hub endpoint %q (HF_ENDPOINT) is not an http(s) URL; set it like https://huggingface.co: %w", s.Endpoint, ErrBadInput)
	}
	hc := *s.HTTPClient
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &client{s: s, http: &hc, endpoint: u}, nil
}

func (c *client) sameOrigin(u *url.URL) bool {
	return strings.EqualFold(u.Scheme, c.endpoint.Scheme) && strings.EqualFold(u.Host, c.endpoint.Host)
}

// do sends one request and follows redirects: all of them when followAll,
// else only relative ones (a renamed repo), returning the first redirect
// to another host as the response.
func (c *client) do(ctx context.Context, method, rawURL string, header http.Header, followAll bool) (*http.Response, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	for hop := 0; ; hop++ {
		req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
		if err != nil {
			return nil, err
		}
		for k, v := range header {
			req.Header[k] = v
		}
		req.Header.Set("User-Agent", userAgent)
		if c.s.Token != "" && c.sameOrigin(u) {
			req.Header.Set("Authorization", "Bearer "+c.s.Token)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, err
		}
		loc := resp.Header.Get("Location")
		if resp.StatusCode < 300 || resp.StatusCode > 399 || loc == "" || resp.StatusCode == http.StatusNotModified {
			return resp, nil
		}
		next, err := u.Parse(loc)
		if err != nil {
			resp.Body.Close()
			return nil, fmt.Errorf("bad redirect Location %q: %w", loc, err)
		}
		relative := !strings.Contains(loc, "://") && !strings.HasPrefix(loc, "//")
		if !followAll && !relative {
			return resp, nil
		}
		if hop >= maxRedirects {
			resp.Body.Close()
			return nil, fmt.Errorf("more than %d redirects from %s", maxRedirects, rawURL)
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		u = next
	}
}

// transient reports whether a failure may go away when retried.
func transientStatus(code int) bool {
	return code == http.StatusTooManyRequests || code >= 500
}

func transientErr(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return !errors.Is(ue.Err, context.Canceled) && !errors.Is(ue.Err, context.DeadlineExceeded)
	}
	// Short bodies, connection resets and the like surface as plain errors
	// from Read.
	return true
}

// backoff waits before attempt (1-based) unless ctx ends first.
func backoff(ctx context.Context, attempt int) error {
	d := retryBase << (attempt - 1)
	if d > retryMax || d <= 0 {
		d = retryMax
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// unreachable holds the endpoints that gave no answer through a whole
// retry loop in this process. One grpo command asks the hub several
// times (the estimate's config.json, the model's, its files, a dataset);
// once the hub has proved unreachable, each later request tries once
// instead of spending the backoff again, and any answer clears the mark.
var unreachable sync.Map // endpoint → struct{}

// doRetry is do with bounded retries of transient failures. A final
// non-2xx/3xx response is returned (unconsumed) for the caller to map
// into an Error; only transport failures become err.
func (c *client) doRetry(ctx context.Context, method, rawURL string, header http.Header, followAll bool) (*http.Response, error) {
	var lastErr error
	tries := maxAttempts
	if _, down := unreachable.Load(c.s.Endpoint); down {
		tries = 1
	}
	for attempt := 1; ; attempt++ {
		resp, err := c.do(ctx, method, rawURL, header, followAll)
		if err == nil {
			unreachable.Delete(c.s.Endpoint)
		}
		if err == nil && !transientStatus(resp.StatusCode) {
			return resp, nil
		}
		if err == nil {
			lastErr = fmt.Errorf("HTTP %d", resp.StatusCode)
			if attempt >= maxAttempts {
				return resp, nil
			}
			resp.Body.Close()
		} else {
			lastErr = err
			switch {
			case !transientErr(err):
				return nil, fmt.Errorf("%w (after %d attempts)", lastErr, attempt)
			case tries == 1:
				return nil, fmt.Errorf("%w (tried once: it did not answer earlier in this command either)", lastErr)
			case attempt >= tries:
				unreachable.Store(c.s.Endpoint, struct{}{})
				return nil, fmt.Errorf("%w (after %d attempts)", lastErr, attempt)
			}
		}
		if err := backoff(ctx, attempt); err != nil {
			return nil, err
		}
	}
}

// resolveURL is where the hub serves file at revision.
func (c *client) resolveURL(repo, rev, file string) string {
	return c.s.Endpoint + "/" + c.s.repoPath(repo) + "/resolve/" + url.PathEscape(rev) + "/" + escapePath(file)
}

// escapePath escapes each segment of a slash-separated repo path.
func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}
