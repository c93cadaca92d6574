package custom

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/httpjson"
	"github.com/grpo-dev/grpo/sandbox"
)

// toolConfig is one [[tool]] table of environment.toml: a function the
// model may call, declared as an OpenAI function (name, description,
// parameters as a JSON Schema table) and backed by an HTTP endpoint or a
// command.
type toolConfig struct {
	Name        string            `toml:"name"`
	Description string            `toml:"description"`
	Parameters  map[string]any    `toml:"parameters"`
	URL         string            `toml:"url"`
	Headers     map[string]string `toml:"headers"`
	Command     []string          `toml:"command"`
	Timeout     string            `toml:"timeout"`
}

// defaultCustomMaxTurns is max_turns for a custom environment with tools
// that sets none: verifiers' ToolEnv default.
const defaultCustomMaxTurns = 10

// defaultToolTimeout bounds one tool call when the table sets no timeout.
const defaultToolTimeout = 30 * time.Second

// maxToolResult caps a tool's reply: a result the model reads must fit in
// its context anyway, and an endless body must not fill memory.
const maxToolResult = 1 << 20

var toolNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`)

// checkTools validates the [[tool]] tables and max_turns.
func (c *customConfig) checkTools(f *configFile) error {
	if c.MaxTurns < 0 {
		return fmt.Errorf("%s: max_turns = %d: want a count of model turns ≥ 1", f.at("max_turns", -1), c.MaxTurns)
	}
	if len(c.Tool) == 0 {
		if c.MaxTurns > 0 && c.Agent == nil {
			return fmt.Errorf("%s: max_turns without [[tool]] tables or [agent]: an environment without tools answers in one turn; declare its tools or drop max_turns", f.at("max_turns", -1))
		}
		return nil
	}
	if c.MaxTurns == 0 {
		c.MaxTurns = defaultCustomMaxTurns
	}
	seen := map[string]bool{}
	for i, t := range c.Tool {
		at := f.atTable("tool", "name", i)
		switch {
		case !toolNameRe.MatchString(t.Name):
			return fmt.Errorf("%s: [[tool]] %d: name %q must be a function name (letters, digits, '_', '-'; 64 at most)", at, i+1, t.Name)
		case seen[t.Name]:
			return fmt.Errorf("%s: [[tool]] name %q is declared twice", at, t.Name)
		case (t.URL == "") == (len(t.Command) == 0):
			return fmt.Errorf("%s: [[tool]] %s needs exactly one of url = \"http://...\" (POST the arguments, the reply is the result) or command = [\"prog\", ...]", at, t.Name)
		}
		seen[t.Name] = true
		if t.URL != "" {
			if u, err := url.Parse(t.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("%s: [[tool]] %s: url %q is not an http(s) URL", at, t.Name, t.URL)
			}
		}
		if t.Timeout != "" {
			if d, err := time.ParseDuration(t.Timeout); err != nil || d <= 0 {
				return fmt.Errorf("%s: [[tool]] %s: timeout %q is not a positive duration; write e.g. \"10s\"", at, t.Name, t.Timeout)
			}
		}
		if _, err := t.spec(); err != nil {
			return fmt.Errorf("%s: [[tool]] %s: %v", at, t.Name, err)
		}
	}
	return nil
}

// spec is the tool's schema, read back through ParseToolSchema so a
// config's tool is checked as a Go one would be.
func (t toolConfig) spec() (env.ToolSpec, error) {
	params := t.Parameters
	if params == nil {
		params = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	// FuncTool's schema is the OpenAI wrapper every tool shows.
	raw := (&env.FuncTool{Spec: env.ToolSpec{Name: t.Name, Description: t.Description, Parameters: mustJSON(params)}}).Schema()
	return env.ParseToolSchema(raw)
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func (t toolConfig) timeout() time.Duration {
	if d, err := time.ParseDuration(t.Timeout); err == nil && d > 0 {
		return d
	}
	return defaultToolTimeout
}

// buildTool makes the Tool a [[tool]] table declares.
func buildTool(dir string, t toolConfig) (env.Tool, error) {
	spec, err := t.spec()
	if err != nil {
		return nil, err
	}
	if len(t.Command) > 0 {
		return newCommandTool(dir, spec, t.Command, t.timeout())
	}
	headers := make(map[string]string, len(t.Headers))
	for k, v := range t.Headers {
		headers[k] = os.ExpandEnv(v) // "Bearer ${MY_TOKEN}": secrets stay out of the file
	}
	return &httpTool{spec: spec, url: t.URL, headers: headers, timeout: t.timeout(), client: http.DefaultClient}, nil
}

// httpTool is a tool served over HTTP: each call POSTs the arguments
// object as JSON to the URL, and a 2xx reply's body is the result the
// model reads. Any other status, a timeout or a body over 1 MiB is the
// call's error (the model sees it, the run goes on).
type httpTool struct {
	spec    env.ToolSpec
	url     string
	headers map[string]string
	timeout time.Duration
	client  *http.Client
}

func (h *httpTool) Name() string            { return h.spec.Name }
func (h *httpTool) Schema() json.RawMessage { return (&env.FuncTool{Spec: h.spec}).Schema() }
func (h *httpTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	body, err := httpjson.Post(ctx, h.client, h.url, h.headers, args, h.timeout, maxToolResult)
	if err != nil {
		return "", fmt.Errorf("%s: %v", h.spec.Name, err)
	}
	return string(body), nil
}

// newCommandTool runs a [[tool]]'s command in a fresh sandbox per call
// (sandbox.RunCommand: no network, cleared environment, rlimits, /tmp as
// its work dir), since the arguments are model-written. The environment's
// directory is bound read-only at its own path, and arguments naming its
// files (or folders) are made absolute, so command = ["python3", "tool.py"] finds the
// script. The call's arguments (a JSON object) are its stdin, its stdout
// is the result; a nonzero exit, a timeout or too much output is the
// call's error, with what the command wrote to stderr.
func newCommandTool(dir string, spec env.ToolSpec, argv []string, timeout time.Duration) (env.Tool, error) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return nil, fmt.Errorf("[[tool]] %s: %v", spec.Name, err)
	}
	cfg := sandbox.Config{ReadOnly: []string{abs}, Timeout: timeout, MaxOutput: maxToolResult}
	// Refuse when the environment loads, with sandbox's line on how to
	// enable it, rather than fail every call of a run.
	if err := sandbox.Check(cfg); err != nil {
		return nil, fmt.Errorf("[[tool]] %s runs a command on model-written arguments: %w", spec.Name, err)
	}
	args := append([]string(nil), argv...)
	for i, a := range args {
		if p := filepath.Join(abs, a); !filepath.IsAbs(a) && fileExists(p) {
			args[i] = p
		}
	}
	return &env.FuncTool{Spec: spec, Func: func(ctx context.Context, in json.RawMessage) (string, error) {
		res, err := sandbox.RunCommand(ctx, cfg, args, in)
		if err != nil {
			return "", fmt.Errorf("%s: %v", spec.Name, err)
		}
		why := res.Error
		if why == "" && res.ExitCode != 0 {
			why = fmt.Sprintf("exit status %d", res.ExitCode)
		}
		if why != "" {
			if s := strings.TrimSpace(res.Stderr); s != "" {
				why += ": " + s
			}
			return "", fmt.Errorf("%s: %s", spec.Name, why)
		}
		return res.Stdout, nil
	}}, nil
}
