package rubric

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// rewardServer answers POSTs like a Python reward server would: the difflib
// ratio of the last assistant message to the answer, unless the answer asks
// for a misbehaviour.
func rewardServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "want a JSON POST", http.StatusMethodNotAllowed)
			return
		}
		var r Rollout
		if err := json.NewDecoder(req.Body).Decode(&r); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		switch r.Answer {
		case "500":
			http.Error(w, "Traceback: KeyError 'answer'", http.StatusInternalServerError)
		case "slow":
			select {
			case <-time.After(5 * time.Second):
			case <-req.Context().Done():
			}
		case "garbage":
			w.Write([]byte("<html>oops</html>"))
		case "huge":
			w.Write([]byte(strings.Repeat("1", 5000)))
		case "auth":
			w.Write([]byte(req.Header.Get("X-Token")))
		default:
			json.NewEncoder(w).Encode(map[string]any{
				"reward":  Ratio(r.LastAssistant(), r.Answer),
				"metrics": map[string]float64{"prompt_msgs": float64(len(r.Prompt))},
			})
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPRoundTrip(t *testing.T) {
	srv := rewardServer(t)
	f, err := HTTP(HTTPConfig{URL: srv.URL, Headers: map[string]string{"X-Token": "0.25"}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := f(t.Context(), SingleTurn("q", "dcbx", "dcba"))
	if err != nil || s.Value != 0.75 || s.Metrics["prompt_msgs"] != 1 {
		t.Errorf("score %+v, %v; want 0.75 with prompt_msgs=1", s, err)
	}
	s, err = f(t.Context(), SingleTurn("q", "c", "auth"))
	if err != nil || s.Value != 0.25 {
		t.Errorf("header not sent: score %v, %v", s.Value, err)
	}
}

func TestHTTPFailures(t *testing.T) {
	srv := rewardServer(t)
	f, err := HTTP(HTTPConfig{URL: srv.URL, Timeout: 200 * time.Millisecond, MaxBody: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for answer, want := range map[string]string{
		"500":     "HTTP 500 Internal Server Error: \"Traceback: KeyError 'answer'",
		"slow":    "no reply within 200ms",
		"garbage": `reply "<html>oops</html>" is not a finite number`,
		"huge":    "reply longer than 1000 bytes",
	} {
		start := time.Now()
		_, err := f(t.Context(), SingleTurn("q", "c", answer))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("answer %s: error %v; want it to contain %q", answer, err, want)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("answer %s: error %q spans lines", answer, err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("answer %s: took %v", answer, took)
		}
	}
	// A server that is not there.
	srv.Close()
	if _, err := f(t.Context(), SingleTurn("q", "c", "a")); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("closed server: error %v; want connection refused", err)
	}
}

func TestHTTPConfigErrors(t *testing.T) {
	for _, u := range []string{"", "localhost:8000", "ftp://x/y", "http://", "http://x/%zz"} {
		if _, err := HTTP(HTTPConfig{URL: u}); err == nil {
			t.Errorf("HTTP accepted url %q", u)
		}
	}
	if _, err := HTTP(HTTPConfig{URL: "http://x", Timeout: -time.Second}); err == nil {
		t.Error("HTTP accepted a negative timeout")
	}
}
