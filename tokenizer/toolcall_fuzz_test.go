package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzToolCalls: the parsers read text a model sampled, which can be
// anything. Whatever it is, Parse returns without panicking, every call is
// either well-formed (a name and a JSON object of arguments) or carries an
// error, and a Hermes turn yields at most one call per <tool_call>. A call
// in the canonical form appended to the text is read back exactly.
func FuzzToolCalls(f *testing.F) {
	for _, s := range []string{
		"plain text", "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>",
		"<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": [1]}\"}</tool_call><tool_call>{",
		"<think><tool_call></think>", `<|python_tag|>{"name": "a", "parameters": {}}; {"name": "b"}`,
		`{"name": 3}`, `{"name": "x", "parameters": null};;`, "<tool_call></tool_call></tool_call>",
	} {
		f.Add(s, "f", `{"k": "v"}`)
	}
	f.Fuzz(func(t *testing.T, text, name, args string) {
		for _, format := range []ToolCallFormat{ToolCallsHermes, ToolCallsLlama3, ToolCallsNone} {
			turn := format.Parse(text)
			for i, c := range turn.Calls {
				if c.Err == "" && (c.Name == "" || !json.Valid(c.Arguments) || !strings.HasPrefix(string(c.Arguments), "{")) {
					t.Fatalf("%v %q: call %d has no error but name %q, arguments %q", format, text, i, c.Name, c.Arguments)
				}
			}
			if format == ToolCallsHermes && len(turn.Calls) > strings.Count(text, hermesOpen) {
				t.Fatalf("%q: %d calls from %d <tool_call>", text, len(turn.Calls), strings.Count(text, hermesOpen))
			}
		}
		var obj map[string]any
		if name == "" || !utf8.ValidString(name) || json.Unmarshal([]byte(args), &obj) != nil || obj == nil || strings.Contains(text, "</think>") || strings.Contains(text, hermesOpen) {
			return
		}
		compact, _ := json.Marshal(obj)
		qname, _ := json.Marshal(name)
		call := fmt.Sprintf("<tool_call>\n{\"name\": %s, \"arguments\": %s}\n</tool_call>", qname, compact)
		turn := ToolCallsHermes.Parse(text + "\n" + call)
		if len(turn.Calls) != 1 || turn.Calls[0].Name != name || string(turn.Calls[0].Arguments) != string(compact) || turn.Content != text {
			t.Fatalf("%q + canonical call %s: read back %+v", text, call, turn)
		}
	})
}
