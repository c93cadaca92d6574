package env

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestCheckToolArgs(t *testing.T) {
	tool, err := NewFuncTool("find", "Find things.\nMore detail.", `{"type": "object", "properties": {
		"query": {"type": "string"}, "limit": {"type": "integer"}, "mode": {"enum": ["fast", "exact"]},
		"tags": {"type": "array", "items": {"type": "string"}}, "score": {"type": ["number", "null"]}},
		"required": ["query"], "additionalProperties": false}`, func(context.Context, json.RawMessage) (string, error) { return "", nil })
	if err != nil {
		t.Fatal(err)
	}
	if s := tool.Spec.Summary(); s != "Find things." {
		t.Errorf("summary %q", s)
	}
	for args, want := range map[string]string{
		`{"query": "x"}`: "",
		`{"query": "x", "limit": 3, "mode": "fast", "tags": ["a"], "score": null}`: "",
		`{"query": "x", "limit": 3.0, "score": 0.5}`:                               "",
		`{}`:                            `find: missing required argument "query"`,
		`[1]`:                           "find: the arguments must be a JSON object",
		`{"query": 1}`:                  `find: argument "query" must be string, not a number`,
		`{"query": "x", "limit": 2.5}`:  `find: argument "limit" must be integer, not a number`,
		`{"query": "x", "mode": "x"}`:   `find: argument "mode" must be one of "fast", "exact"`,
		`{"query": "x", "tags": [1]}`:   `find: argument "tags" item 0 must be string, not a number`,
		`{"query": "x", "other": true}`: `find: unexpected argument "other"; it takes "limit", "mode", "query", "score", "tags"`,
	} {
		err := CheckToolArgs(tool.Spec, json.RawMessage(args))
		if got := ""; err != nil {
			got = err.Error()
			if got != want {
				t.Errorf("%s: %q, want %q", args, got, want)
			}
		} else if want != "" {
			t.Errorf("%s: accepted, want %q", args, want)
		}
	}
	// Without additionalProperties false, other keys pass.
	open, _ := NewFuncTool("open", "", `{"type": "object", "properties": {}}`, nil)
	if err := CheckToolArgs(open.Spec, json.RawMessage(`{"x": 1}`)); err != nil {
		t.Errorf("open schema: %v", err)
	}
}

func TestParseToolSchema(t *testing.T) {
	tool, _ := NewFuncTool("f", "d", "", nil)
	if got := string(tool.Schema()); got != `{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object","properties":{}}}}` {
		t.Errorf("schema %s", got)
	}
	for raw, want := range map[string]string{
		`{"name": "g", "parameters": {"type": "object"}}`:        "",
		`{"type": "function", "function": {"description": "x"}}`: `no function "name"`,
		`{"type": "retrieval", "function": {"name": "x"}}`:       `only "function" tools`,
		`{"name": "g", "parameters": {"type": "string"}}`:        "parameters are an object",
		`{"name": "g", "parameters": {"type": 3}}`:               `"type" must be`,
		`not json`: "not a JSON object",
	} {
		_, err := ParseToolSchema(json.RawMessage(raw))
		if (err == nil) != (want == "") || err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", raw, err, want)
		}
	}
}
