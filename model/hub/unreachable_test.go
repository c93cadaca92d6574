package hub

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// refusingTransport fails every request as a hub that is not there does,
// and counts them.
type refusingTransport struct{ n *atomic.Int32 }

func (t refusingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	t.n.Add(1)
	return nil, errors.New("dial tcp: connect: connection refused")
}

// answeringTransport answers every request with a 404.
type answeringTransport struct{}

func (answeringTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusNotFound, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
}

// TestUnreachableHubTriedOnceAfter: the first request to a hub that does
// not answer spends its retries; the later ones of the same command (a
// model after its config.json, a dataset) try once each instead of waiting
// through the backoff again (issue 27), and still fail with the cause.
func TestUnreachableHubTriedOnceAfter(t *testing.T) {
	isolate(t)
	var n atomic.Int32
	opts := Options{Endpoint: "http://hub.invalid", CacheDir: t.TempDir(), HTTPClient: &http.Client{Transport: refusingTransport{&n}}}
	ctx := context.Background()
	if _, err := DownloadFile(ctx, "Org/Tiny", "config.json", opts); !errors.Is(err, ErrTransfer) || n.Load() != maxAttempts {
		t.Fatalf("first request: %d tries, %v", n.Load(), err)
	}
	n.Store(0)
	_, err := Resolve(ctx, "Org/Tiny", opts)
	if !errors.Is(err, ErrTransfer) || !strings.Contains(err.Error(), "connection refused") || n.Load() != 1 {
		t.Fatalf("second request: %d tries, %v", n.Load(), err)
	}
	// An answer (here a 404) clears the mark: the hub is back, and a
	// later failure gets its retries again.
	opts.HTTPClient = &http.Client{Transport: answeringTransport{}}
	if _, err := DownloadFile(ctx, "Org/Tiny", "config.json", opts); !errors.Is(err, ErrNotFound) {
		t.Fatalf("answering hub: %v", err)
	}
	n.Store(0)
	opts.HTTPClient = &http.Client{Transport: refusingTransport{&n}}
	if _, err := DownloadFile(ctx, "Org/Tiny", "config.json", opts); err == nil || n.Load() != maxAttempts {
		t.Fatalf("after an answer: %d tries, %v", n.Load(), err)
	}
	// Another hub is not marked by this one's silence.
	n.Store(0)
	other := opts
	other.Endpoint = "http://other-hub.invalid"
	if _, err := DownloadFile(ctx, "Org/Tiny", "config.json", other); err == nil || n.Load() != maxAttempts {
		t.Fatalf("another hub: %d tries, %v", n.Load(), err)
	}
}
