package custom

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/envtest"
)

// toolEnvDir is the capitals environment with top-level keys before its
// tables and [[tool]] tables after them.
func toolEnvDir(t *testing.T, top, tools string) string {
	t.Helper()
	dir := capitalsDir(t)
	envtest.WriteFile(t, dir, "environment.toml", top+capitalsTOML+tools)
	return dir
}

// An HTTP-backed [[tool]]: declared as an OpenAI function in
// environment.toml, each call POSTs the arguments and returns the body;
// a failing status and a timeout are the call's errors.
func TestCustomHTTPTool(t *testing.T) {
	t.Setenv("CAPS_TOKEN", "s3cret")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var args struct{ Country string }
		json.Unmarshal(body, &args)
		switch {
		case r.Header.Get("Authorization") != "Bearer s3cret":
			http.Error(w, "no token", http.StatusUnauthorized)
		case args.Country == "slow":
			time.Sleep(300 * time.Millisecond)
		case args.Country == "Peru":
			io.WriteString(w, "Lima is the capital of Peru.")
		default:
			http.Error(w, "unknown country "+args.Country, http.StatusNotFound)
		}
	}))
	defer srv.Close()
	dir := toolEnvDir(t, "max_turns = 4\n", `
[[tool]]
name = "atlas"
description = "Look a country up in the atlas.\nReturns one sentence."
parameters = { type = "object", properties = { country = { type = "string", description = "English name" } }, required = ["country"] }
url = "`+srv.URL+`/atlas"
headers = { Authorization = "Bearer ${CAPS_TOKEN}" }
timeout = "100ms"
`)
	spec, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	e, err := spec.New(env.Args{"num_train_examples": -1, "num_eval_examples": -1, "system_prompt": ""}, env.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tools := env.ToolsOf(e)
	if len(tools) != 1 || e.(env.TurnLimiter).MaxTurns() != 4 || e.(env.ReplySizer).ReplyTokens() != env.ToolReplyTokens {
		t.Fatalf("tools %v, max_turns %d", tools, e.(env.TurnLimiter).MaxTurns())
	}
	ts, err := env.ParseToolSchema(tools[0].Schema())
	if err != nil || ts.Name != "atlas" || ts.Summary() != "Look a country up in the atlas." || env.CheckToolArgs(ts, json.RawMessage(`{}`)) == nil {
		t.Errorf("schema %s: %+v, %v", tools[0].Schema(), ts, err)
	}
	ctx := context.Background()
	if got, err := tools[0].Call(ctx, json.RawMessage(`{"country": "Peru"}`)); err != nil || got != "Lima is the capital of Peru." {
		t.Errorf("call: %q, %v", got, err)
	}
	if _, err := tools[0].Call(ctx, json.RawMessage(`{"country": "Atlantis"}`)); err == nil || !strings.Contains(err.Error(), "HTTP 404: unknown country Atlantis") {
		t.Errorf("404: %v", err)
	}
	if _, err := tools[0].Call(ctx, json.RawMessage(`{"country": "slow"}`)); err == nil || !strings.Contains(err.Error(), "did not answer within 100ms") {
		t.Errorf("timeout: %v", err)
	}
}

// Malformed [[tool]] tables are refused with the line to fix.
func TestCustomToolConfigErrors(t *testing.T) {
	for tools, want := range map[string]string{
		"": "max_turns without [[tool]] tables",
		"\n[[tool]]\nname = \"a b\"\nurl = \"http://x\"\n":                                           `name "a b" must be a function name`,
		"\n[[tool]]\nname = \"a\"\n":                                                                 "needs exactly one of url",
		"\n[[tool]]\nname = \"a\"\nurl = \"ftp://x\"\n":                                              "is not an http(s) URL",
		"\n[[tool]]\nname = \"a\"\nurl = \"http://x\"\ntimeout = \"soon\"\n":                         "is not a positive duration",
		"\n[[tool]]\nname = \"a\"\nurl = \"http://x\"\nparameters = { type = \"string\" }\n":         "parameters are an object",
		"\n[[tool]]\nname = \"a\"\nurl = \"http://x\"\n[[tool]]\nname = \"a\"\nurl = \"http://y\"\n": "declared twice",
		"\n[[tool]]\nname = \"a\"\nurl = \"http://x\"\ncolour = 1\n":                                 "unknown key",
	} {
		top := ""
		if tools == "" {
			top = "max_turns = 3\n"
		}
		_, err := LoadDir(toolEnvDir(t, top, tools))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "environment.toml:") {
			t.Errorf("%q: %v, want an error with its line containing %q", tools, err, want)
		}
	}
}
