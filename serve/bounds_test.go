package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/endpoints"
)

// allocated is the bytes the process allocates while f runs.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// serveBody runs one request through the server's handler in-process, so
// only the server's allocations are counted.
func serveBody(s *Server, path string, body []byte) (int, endpoints.ErrorBody) {
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("POST", path, bytes.NewReader(body)))
	var eb endpoints.ErrorBody
	json.Unmarshal(rec.Body.Bytes(), &eb)
	return rec.Code, eb
}

func paramOf(eb endpoints.ErrorBody) string {
	if eb.Error.Param == nil {
		return ""
	}
	return *eb.Error.Param
}

// TestAbsurdNRefusedBeforeAllocating: n far above the slots is a 400
// naming n, found before n parameter sets are made (issue 27: n = 10⁹
// allocated them and the process died).
func TestAbsurdNRefusedBeforeAllocating(t *testing.T) {
	dir := t.TempDir()
	writeTestModel(t, dir)
	f := newFixtureStopped(t, dir, Config{Slots: 2, MaxLen: 64})
	for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
		body := []byte(`{"messages":[{"role":"user","content":"hi"}],"prompt":"hi","n":1000000}`)
		var code int
		var eb endpoints.ErrorBody
		n := allocated(func() { code, eb = serveBody(f.srv, path, body) })
		if code != 400 || paramOf(eb) != "n" || !strings.Contains(eb.Error.Message, "2 slots") {
			t.Errorf("%s: %d %+v", path, code, eb.Error)
		}
		if n > 4<<20 {
			t.Errorf("%s: refusing n = 10⁶ allocated %d MB", path, n>>20)
		}
	}
}

// TestHugePromptRefusedBeforeTokenizing: a 15 MB text prompt on a server
// of 64 tokens is refused from its length, naming the request's key,
// without the hundreds of MB that tokenizing it costs.
func TestHugePromptRefusedBeforeTokenizing(t *testing.T) {
	dir := t.TempDir()
	writeTestModel(t, dir)
	f := newFixtureStopped(t, dir, Config{Slots: 2, MaxLen: 64})
	huge := strings.Repeat("lorem ipsum ", 15<<20/12)
	// copies: what reading, decoding (and for chat rendering: the template
	// engine copies its strings a few times) cost, in copies of the body.
	for _, c := range []struct {
		path, param string
		body        map[string]any
		copies      uint64
	}{
		{"/v1/completions", "prompt", map[string]any{"prompt": huge}, 4},
		{"/v1/completions", "prompt", map[string]any{"prompt": []string{huge}}, 4},
		{"/v1/chat/completions", "messages", map[string]any{"messages": user(huge)}, 10},
	} {
		body, _ := json.Marshal(c.body)
		var code int
		var eb endpoints.ErrorBody
		n := allocated(func() { code, eb = serveBody(f.srv, c.path, body) })
		if code != 400 || paramOf(eb) != c.param || !strings.Contains(eb.Error.Message, "max_model_len is 64") {
			t.Errorf("%s: %d %+v", c.path, code, eb.Error)
		}
		if n > c.copies*uint64(len(body)) {
			t.Errorf("%s: refusing a %d MB prompt allocated %d MB", c.path, len(body)>>20, n>>20)
		}
		t.Logf("%s: a %d MB prompt refused after %d MB allocated", c.path, len(body)>>20, n>>20)
	}
	// A prompt just under the limit is still served: the bound is honest.
	req := completionRequest{Prompt: json.RawMessage(`"` + strings.Repeat("a", 62) + `"`)}
	if _, e := f.srv.planCompletion(&req); e != nil {
		t.Errorf("62 bytes on a 64-token server: %v", e)
	}
}

// TestStartRefusesImpossibleLimits: --max-len beyond the model's context
// and slots whose KV cache cannot fit are errors at start, not a server
// that fails later or dies allocating.
func TestStartRefusesImpossibleLimits(t *testing.T) {
	dir := t.TempDir()
	writeTestModel(t, dir)
	fx := newFixtureStopped(t, dir, Config{Slots: 1, MaxLen: 64})
	m, tok := fx.srv.m, fx.srv.tok
	for _, c := range []struct {
		cfg  Config
		says string
	}{
		{Config{ModelName: "tiny", MaxLen: 100000}, "beyond the model's context of 512"},
		{Config{ModelName: "tiny", Slots: 1 << 30, MaxLen: 512}, "of KV cache"},
		{Config{ModelName: "tiny", Slots: -1}, "want at least 1"},
		{Config{ModelName: "tiny", MaxLen: 1}, "want at least 2"},
		{Config{ModelName: "tiny", Adapters: map[string]string{"a\x1b[2J": "x"}}, "printable"},
	} {
		if _, err := New(m, tok, c.cfg); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%+v: %v; want an error saying %q", c.cfg, err, c.says)
		}
	}
}

// TestRequestFieldsNameTheAPI: errors name the request's keys and JSON
// kinds, never Go's names (samplingFields.max_tokens,
// serve.completionRequest); negative log-prob counts and unbounded stop
// lists are refused.
func TestRequestFieldsNameTheAPI(t *testing.T) {
	f := newFixture(t, Config{Slots: 2, MaxLen: 64})
	many := make([]string, maxStops+1)
	for i := range many {
		many[i] = "s"
	}
	for _, c := range []struct {
		path  string
		body  string
		param string
		says  string
	}{
		{"/v1/completions", `{"prompt":"a","max_tokens":"x"}`, "max_tokens", "max_tokens: want an integer, got a JSON string"},
		{"/v1/chat/completions", `{"messages":[],"n":1.5}`, "n", "n: want an integer"},
		{"/v1/completions", `[]`, "", "want an object, got a JSON array"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":-1}`, "top_logprobs", "top_logprobs = -1"},
		{"/v1/completions", `{"prompt":"a","logprobs":-1}`, "logprobs", "logprobs = -1"},
		{"/v1/completions", `{"prompt":"a","stop":` + string(must(json.Marshal(many))) + `}`, "stop", "at most 64"},
		{"/v1/completions", `{"prompt":"a","stop":"` + strings.Repeat("x", maxStopBytes+1) + `"}`, "stop", "stop[0] is 1025 bytes"},
		{"/v1/completions", `{"prompt":"a","stop_token_ids":[99999]}`, "stop_token_ids", "outside the model's vocabulary"},
		{"/v1/completions", `{"prompt":"` + strings.Repeat("x", 200) + `"}`, "prompt", "max_model_len is 64"},
	} {
		resp, err := http.Post(f.url+c.path, "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		var eb endpoints.ErrorBody
		json.NewDecoder(resp.Body).Decode(&eb)
		resp.Body.Close()
		if resp.StatusCode != 400 || paramOf(eb) != c.param || !strings.Contains(eb.Error.Message, c.says) || strings.Contains(eb.Error.Message, "serve.") || strings.Contains(eb.Error.Message, "Fields") {
			t.Errorf("%.60s: %d %q (param %q); want 400, param %q, message with %q", c.body, resp.StatusCode, eb.Error.Message, paramOf(eb), c.param, c.says)
		}
	}
}

// TestCompletionStreamPromptIDsWithoutEcho: with return_token_ids and no
// echo, a choice's first piece carries prompt_token_ids even when an
// earlier wake-up found nothing to send for it (the piece that found
// nothing used to mark the choice started, and the ids were never sent).
func TestCompletionStreamPromptIDsWithoutEcho(t *testing.T) {
	dir := t.TempDir()
	writeTestModel(t, dir)
	f := newFixtureStopped(t, dir, Config{Slots: 2, MaxLen: 64})
	plan := &completionPlan{req: completionRequest{samplingFields: samplingFields{ReturnTokenIDs: true}}, prompt: []int32{97, 98}, top: -1}
	k := &completionStream{s: f.srv, plan: plan, id: "x", name: "tiny", first: make([]bool, 2), offsets: make([]int, 2)}
	if _, ok := k.piece(1, &output{}, "", 0); ok {
		t.Fatal("a choice with nothing new made an event")
	}
	ev, ok := k.piece(1, &output{Tokens: []int32{99}}, "c", 0)
	if !ok {
		t.Fatal("no event for a new token")
	}
	c := ev.(completionChunk).Choices[0]
	if len(c.PromptTokenIDs) != 2 || len(c.TokenIDs) != 1 {
		t.Errorf("first piece %+v: want the prompt's 2 ids and 1 token id", c)
	}
}

// TestRequestLogLine: each request logs one line with method, path,
// status, tokens and latency, as vLLM's access log does.
func TestRequestLogLine(t *testing.T) {
	var lines []string
	logs := make(chan string, 16)
	f := newFixture(t, Config{Slots: 2, MaxLen: 64, Logf: func(format string, args ...any) {
		logs <- strings.TrimSpace(sprintf(format, args...))
	}})
	f.post(t, "/v1/completions", map[string]any{"prompt": "ab", "max_tokens": 3, "ignore_eos": true})
	f.post(t, "/v1/completions", map[string]any{"prompt": "ab", "n": 9})
	for len(lines) < 2 {
		select {
		case l := <-logs:
			lines = append(lines, l)
		case <-time.After(5 * time.Second):
			t.Fatalf("after 5 s, %d log lines: %q", len(lines), lines)
		}
	}
	ok := `"POST /v1/completions HTTP/1.1" 200 prompt_tokens=2 completion_tokens=3 `
	bad := `"POST /v1/completions HTTP/1.1" 400 `
	if !strings.Contains(lines[0], ok) || !strings.HasSuffix(lines[0], "s") || !strings.Contains(lines[1], bad) {
		t.Errorf("log lines:\n%s\nwant one with %q and one with %q, each ending in a latency", strings.Join(lines, "\n"), ok, bad)
	}
}

// The adapter of testdata/lora, valid for the tiny model.
func goodAdapter(t *testing.T) string {
	dir, err := filepath.Abs(filepath.Join("..", "testdata", "lora", "ours"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// TestBodyDeadlineEndsWithTheBody: the deadline for reading a body does
// not outlive it: a generation that runs past it is not cancelled (the
// server's read of the idle connection would fail at the deadline and
// cancel the request).
func TestBodyDeadlineEndsWithTheBody(t *testing.T) {
	defer func(d time.Duration) { bodyTimeout = d }(bodyTimeout)
	bodyTimeout = 50 * time.Millisecond
	f := newFixture(t, Config{Slots: 1, MaxLen: 64}, func(s *Server) {
		s.sched.afterStepHook = func([]*job) { time.Sleep(10 * time.Millisecond) }
	})
	code, body := f.post(t, "/v1/completions", map[string]any{"prompt": "ab", "max_tokens": 30, "ignore_eos": true})
	if code != 200 || decodeJSON[endpoints.CompletionResponse](t, body).Usage.CompletionTokens != 30 {
		t.Errorf("a generation outlasting the body deadline: %d %s", code, body)
	}
}
