package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/internal/tinymodel"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/tokenizer"
)

// toolsTemplate is ChatML with Qwen's tool section, so a request's tools
// reach the prompt.
const toolsTemplate = "{%- if tools %}{{- '<|im_start|>system\\n# Tools\\n' }}{%- for tool in tools %}{{- tool | tojson }}{{- '\\n' }}{%- endfor %}{{- '<|im_end|>\\n' }}{%- endif %}{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"

// WriteTestModel writes the tiny Qwen3 with the byte tokenizer and the
// tools template into dir.
func writeTestModel(t testing.TB, dir string) {
	t.Helper()
	if err := tinymodel.Write(dir, filepath.Join("..", "testdata", "models", "qwen3-tiny")); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "tokenizer_config.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["chat_template"] = toolsTemplate
	data, _ = json.Marshal(cfg)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

type fixture struct {
	srv *Server
	url string
}

// newFixture serves the tiny model with cfg (ModelName "tiny" unless
// set) on an httptest server, after the setup functions; both stop at
// the test's end.
func newFixture(t testing.TB, cfg Config, setup ...func(*Server)) *fixture {
	t.Helper()
	dir := t.TempDir()
	writeTestModel(t, dir)
	f := newFixtureStopped(t, dir, cfg)
	for _, s := range setup {
		s(f.srv) // before Run, so the scheduler's goroutine sees it
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return f
}

// newFixtureStopped is newFixture over the model in dir without starting
// the scheduler: requests queue and nothing runs.
func newFixtureStopped(t testing.TB, dir string, cfg Config) *fixture {
	t.Helper()
	m, err := model.Load(dir, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ModelName == "" {
		cfg.ModelName = "tiny"
	}
	if cfg.MaxLen == 0 {
		cfg.MaxLen = 256
	}
	srv, err := New(m, tok, cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	return &fixture{srv: srv, url: hs.URL}
}

// post sends body as JSON and returns the status and reply.
func (f *fixture) post(t testing.TB, path string, body any) (int, []byte) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(f.url+path, "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// events reads a server-sent event stream: each data payload in order,
// failing on anything but "data: " lines and blank separators.
func events(t testing.TB, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	blank := true
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			blank = true
		case strings.HasPrefix(line, "data: ") && blank:
			out = append(out, strings.TrimPrefix(line, "data: "))
			blank = false
		default:
			t.Fatalf("malformed event line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func decodeJSON[T any](t testing.TB, data []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	return v
}
