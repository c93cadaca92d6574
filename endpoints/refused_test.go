package endpoints

import (
	"errors"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
)

// TestRefusedConnectionSaysSo: a server that is not running is named as
// such, with its URL, in one line (issue 27), and the error still unwraps
// to ECONNREFUSED for callers that pick their advice by it.
func TestRefusedConnectionSaysSo(t *testing.T) {
	srv := httptest.NewServer(nil)
	url := srv.URL
	srv.Close() // nothing listens at url now
	c := client(t, Options{MaxRetries: -1}, url)
	_, err := ask(c)
	var ee *Error
	if !errors.As(err, &ee) || !ee.Refused() || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("want a refused *Error, got %T %v", err, err)
	}
	want := "connection refused at " + url + "/v1: is the server running?"
	if msg := err.Error(); !strings.Contains(msg, want) || strings.Contains(msg, "dial tcp") || strings.Contains(msg, "\n") {
		t.Errorf("error %q; want one line with %q", msg, want)
	}
}
