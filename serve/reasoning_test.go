package serve

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/grpo-dev/grpo/endpoints"
)

// TestReasoningEffortReachesTheTemplate: a request's reasoning_effort is
// the chat template's reasoning_effort variable (gpt-oss's harmony
// template reads it): a template that writes it renders the prompt with
// the value sent, and unset leaves it undefined.
func TestReasoningEffortReachesTheTemplate(t *testing.T) {
	dir := t.TempDir()
	writeTestModel(t, dir)
	tpl := `<|im_start|>system
Reasoning: {{ reasoning_effort if reasoning_effort is defined else "unset" }}<|im_end|>
{% for m in messages %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor %}<|im_start|>assistant
`
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), []byte(tpl), 0o644); err != nil {
		t.Fatal(err)
	}
	f := startFixture(t, dir, Config{})
	for effort, want := range map[string]string{"low": "Reasoning: low", "high": "Reasoning: high", "": "Reasoning: unset"} {
		body := map[string]any{"model": "tiny", "messages": user("hi"), "max_tokens": 1, "return_token_ids": true}
		if effort != "" {
			body["reasoning_effort"] = effort
		}
		code, out := f.post(t, "/v1/chat/completions", body)
		if code != 200 {
			t.Fatalf("%d %s", code, out)
		}
		resp := decodeJSON[endpoints.ChatResponse](t, out)
		if prompt := f.srv.tok.Decode(resp.PromptTokenIDs); !strings.Contains(prompt, want+"<|im_end|>") {
			t.Errorf("reasoning_effort %q: prompt %q, want %q in it", effort, prompt, want)
		}
	}
}

// TestReasoningEffortUnreadWarnsOnce: for a model whose template does not
// read reasoning_effort the request is served as without it, and the
// server logs one warning naming the key, once.
func TestReasoningEffortUnreadWarnsOnce(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	f := newFixture(t, Config{Logf: func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	}})
	for range 2 {
		if code, out := f.post(t, "/v1/chat/completions", map[string]any{"model": "tiny", "messages": user("hi"), "max_tokens": 1, "reasoning_effort": "low"}); code != 200 {
			t.Fatalf("%d %s", code, out)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var warnings []string
	for _, l := range lines {
		if strings.Contains(l, "reasoning_effort") {
			warnings = append(warnings, l)
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], `reasoning_effort = "low" changes nothing`) {
		t.Errorf("warnings %q, want one", warnings)
	}
}

// startFixture runs a server over the model in dir until the test ends.
func startFixture(t *testing.T, dir string, cfg Config) *fixture {
	f := newFixtureStopped(t, dir, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return f
}
