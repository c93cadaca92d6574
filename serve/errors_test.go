package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/endpoints"
)

// TestBadRequestsGetErrorObjects: each bad request is answered with its
// status and an OpenAI error object naming the problem (and the field,
// where there is one).
func TestBadRequestsGetErrorObjects(t *testing.T) {
	f := newFixture(t, Config{Slots: 2, MaxLen: 64})
	long := strings.Repeat("x", 100)
	cases := []struct {
		path   string
		body   any
		status int
		param  string
		says   string
	}{
		{"/v1/chat/completions", "{not json", 400, "", "not a JSON object"},
		{"/v1/chat/completions", map[string]any{"messages": "hi"}, 400, "messages", "messages: want a list, got a JSON string"},
		{"/v1/chat/completions", map[string]any{"messages": []any{}}, 400, "messages", "empty"},
		{"/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "robot", "content": "x"}}}, 400, "messages[0].role", "robot"},
		{"/v1/chat/completions", map[string]any{"messages": user("x"), "temperature": -1}, 400, "temperature", "temperature = -1"},
		{"/v1/chat/completions", map[string]any{"messages": user("x"), "top_p": 0}, 400, "top_p", "top_p"},
		{"/v1/chat/completions", map[string]any{"messages": user("x"), "n": 0}, 400, "n", "n = 0"},
		{"/v1/chat/completions", map[string]any{"messages": user("x"), "n": 3}, 400, "n", "exceeds the server's 2 slots"},
		{"/v1/chat/completions", map[string]any{"messages": user("x"), "logprobs": true, "top_logprobs": 30}, 400, "top_logprobs", "top_logprobs = 30"},
		{"/v1/chat/completions", map[string]any{"messages": user("x"), "top_logprobs": 2}, 400, "top_logprobs", "needs logprobs"},
		{"/v1/chat/completions", map[string]any{"messages": user("x"), "frequency_penalty": 0.5}, 400, "frequency_penalty", "not supported"},
		{"/v1/chat/completions", map[string]any{"messages": user("x"), "tool_choice": "required"}, 400, "tool_choice", "not supported"},
		{"/v1/chat/completions", map[string]any{"messages": user("x"), "reasoning_effort": "max"}, 400, "reasoning_effort", `reasoning_effort = "max": want "low", "medium" or "high"`},
		{"/v1/chat/completions", map[string]any{"messages": user("x"), "reasoning_effort": 2}, 400, "reasoning_effort", "reasoning_effort: want a string"},
		{"/v1/chat/completions", map[string]any{"messages": user("x"), "stop": []any{""}}, 400, "", "stop[0] is empty"},
		{"/v1/chat/completions", map[string]any{"messages": user("x"), "seed": "x"}, 400, "seed", "seed: want an integer"},
		{"/v1/chat/completions", map[string]any{"messages": user(long)}, 400, "messages", "max_model_len is 64"},
		{"/v1/chat/completions", map[string]any{"model": "nope", "messages": user("x")}, 404, "model", `"nope" does not exist`},
		{"/v1/completions", map[string]any{"prompt": []int{1, 9999}}, 400, "prompt", "outside the model's vocabulary"},
		{"/v1/completions", map[string]any{"prompt": []string{"a", "b"}}, 400, "prompt", "one prompt per request"},
		{"/v1/completions", map[string]any{}, 400, "prompt", "prompt is missing"},
		{"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 0}, 400, "max_tokens", "max_tokens = 0"},
		{"/v1/load_lora_adapter", map[string]any{"lora_name": "x", "lora_path": "/does/not/exist"}, 400, "lora_path", "adapter x"},
		{"/v1/unload_lora_adapter", map[string]any{"lora_name": "x"}, 404, "lora_name", "not loaded"},
	}
	for _, c := range cases {
		var code int
		var body []byte
		if s, ok := c.body.(string); ok {
			resp, err := http.Post(f.url+c.path, "application/json", strings.NewReader(s))
			if err != nil {
				t.Fatal(err)
			}
			var eb endpoints.ErrorBody
			json.NewDecoder(resp.Body).Decode(&eb)
			resp.Body.Close()
			code, body = resp.StatusCode, must(json.Marshal(eb))
		} else {
			code, body = f.post(t, c.path, c.body)
		}
		var eb endpoints.ErrorBody
		if err := json.Unmarshal(body, &eb); err != nil {
			t.Errorf("%v: the reply is not an error object: %s", c.body, body)
			continue
		}
		e := eb.Error
		param := ""
		if e.Param != nil {
			param = *e.Param
		}
		if code != c.status || !strings.Contains(e.Message, c.says) || param != c.param || e.Type == "" || e.Code == nil {
			t.Errorf("%v: %d %+v (param %q); want %d, param %q, message with %q", c.body, code, e, param, c.status, c.param, c.says)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestQueueBound: with the scheduler not running, one request fills the
// queue of one and the next gets 429 with a rate-limit error object and a
// Retry-After.
func TestQueueBound(t *testing.T) {
	dir := t.TempDir()
	writeTestModel(t, dir)
	f := newFixtureStopped(t, dir, Config{Slots: 1, MaxQueue: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", f.url+"/v1/completions", strings.NewReader(`{"prompt":"a"}`))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	for f.srv.Stats().Waiting != 1 {
		runtime.Gosched() // until the first request is queued
	}
	resp, err := http.Post(f.url+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"b"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var eb endpoints.ErrorBody
	json.NewDecoder(resp.Body).Decode(&eb)
	if resp.StatusCode != 429 || eb.Error.Type != "rate_limit_error" || resp.Header.Get("Retry-After") == "" {
		t.Errorf("%d %+v", resp.StatusCode, eb)
	}
}
