package gepa

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/sampler"
)

// TestStudentGetsReasoningEffort: the config's reasoning_effort goes with
// the student's requests to its endpoint and not with the teacher's (the
// sampling args are the student's).
func TestStudentGetsReasoningEffort(t *testing.T) {
	var mu sync.Mutex
	sent := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		e, _ := req["reasoning_effort"].(string)
		mu.Lock()
		sent[req["model"].(string)] = e
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}`)
	}))
	defer srv.Close()
	reg, err := endpoints.Parse([]byte(fmt.Sprintf("[[endpoint]]\nendpoint_id = \"student\"\nmodel = \"s\"\nurl = %q\nkey = \"\"\n\n[[endpoint]]\nendpoint_id = \"teacher\"\nmodel = \"t\"\nurl = %q\nkey = \"\"\n", srv.URL+"/v1", srv.URL+"/v1")), "endpoints.toml")
	if err != nil {
		t.Fatal(err)
	}
	es := &engineSet{reg: reg, concurrency: 1, reasoningEffort: "high"}
	for key, name := range map[string]string{"model": "student", "reflection_model": "teacher"} {
		eng, err := es.engine(context.Background(), key, name, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := eng.(rollout.RemoteEngine).Gen.Generate(context.Background(), []chat.Message{{Role: "user", Content: "hi"}}, sampler.DefaultParams()); err != nil {
			t.Fatal(err)
		}
	}
	if sent["s"] != "high" || sent["t"] != "" {
		t.Errorf("reasoning_effort sent: %q", sent)
	}
}
