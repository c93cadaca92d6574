package tokenizer

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/chat"
)

type wantCall struct{ name, args, err string }

func checkCalls(t *testing.T, text string, got ParsedTurn, content string, want []wantCall) {
	t.Helper()
	if got.Content != content {
		t.Errorf("%q: content %q, want %q", text, got.Content, content)
	}
	if len(got.Calls) != len(want) {
		t.Fatalf("%q: %d calls %+v, want %d", text, len(got.Calls), got.Calls, len(want))
	}
	for i, w := range want {
		c := got.Calls[i]
		if c.Name != w.name || string(c.Arguments) != w.args || !strings.Contains(c.Err, w.err) || (w.err == "") != (c.Err == "") {
			t.Errorf("%q call %d: %q %s err %q; want %q %s err containing %q", text, i, c.Name, c.Arguments, c.Err, w.name, w.args, w.err)
		}
	}
}

func TestParseHermes(t *testing.T) {
	for _, c := range []struct {
		text, content string
		calls         []wantCall
	}{
		{"The answer is 4.", "The answer is 4.", nil},
		{"Let me look.\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"x\"}}\n</tool_call>", "Let me look.",
			[]wantCall{{"search", `{"q": "x"}`, ""}}},
		{"<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {\"n\": 2}}\n</tool_call>", "",
			[]wantCall{{"a", `{}`, ""}, {"b", `{"n": 2}`, ""}}},
		// Arguments as a JSON string, or absent.
		{`<tool_call>{"name": "f", "arguments": "{\"k\": 1}"}</tool_call>`, "", []wantCall{{"f", `{"k": 1}`, ""}}},
		{`<tool_call>{"name": "f"}</tool_call>`, "", []wantCall{{"f", `{}`, ""}}},
		// Malformed: bad JSON, no name, arguments not an object.
		{`<tool_call>{"name": "f", "arguments": {"k": }</tool_call>`, "", []wantCall{{"", "", "not a valid JSON object"}}},
		{`<tool_call>{"arguments": {}}</tool_call>`, "", []wantCall{{"", "", `no "name"`}}},
		{`<tool_call>{"name": "f", "arguments": [1]}</tool_call>`, "", []wantCall{{"f", "", "must be a JSON object"}}},
		// Left open at the end: read if it parses, an error otherwise.
		{"ok\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n", "ok", []wantCall{{"f", `{}`, ""}}},
		{"<tool_call>\n{\"name\": \"f\", ", "", []wantCall{{"", "", "not closed"}}},
		// Calls inside the thinking are reasoning.
		{"<think>\nmaybe <tool_call>{\"name\": \"x\"}</tool_call>\n</think>\n\nNo call.", "<think>\nmaybe <tool_call>{\"name\": \"x\"}</tool_call>\n</think>\n\nNo call.", nil},
		{"<think>\nplan\n</think>\n\n<tool_call>\n{\"name\": \"y\", \"arguments\": {}}\n</tool_call>", "<think>\nplan\n</think>\n", []wantCall{{"y", `{}`, ""}}},
	} {
		checkCalls(t, c.text, ToolCallsHermes.Parse(c.text), c.content, c.calls)
	}
}

func TestParseLlama3(t *testing.T) {
	for _, c := range []struct {
		text, content string
		calls         []wantCall
	}{
		{"Paris is the capital.", "Paris is the capital.", nil},
		{`{"answer": 3}`, `{"answer": 3}`, nil}, // JSON, but no call
		{`{"name": "get_weather", "parameters": {"city": "Oslo"}}`, "", []wantCall{{"get_weather", `{"city": "Oslo"}`, ""}}},
		{`<|python_tag|>{"name": "a", "parameters": {}}; {"name": "b", "arguments": {"x": 1}}`, "", []wantCall{{"a", `{}`, ""}, {"b", `{"x": 1}`, ""}}},
		{`{"name": "a", "parameters": {"x": }`, "", []wantCall{{"", "", "not valid JSON"}}},
		{`<|python_tag|>brave_search.call(query="x")`, "", []wantCall{{"", "", "not valid JSON"}}},
		{`{"name": "a", "parameters": {}} and more`, "", []wantCall{{"a", `{}`, ""}, {"", "", "not valid JSON"}}},
	} {
		checkCalls(t, c.text, ToolCallsLlama3.Parse(c.text), c.content, c.calls)
	}
}

func TestToolCallFormatOfTemplates(t *testing.T) {
	tok := qwen3(t)
	if f := tok.ToolCallFormat(); f != ToolCallsHermes {
		t.Errorf("Qwen3's template: format %v, want hermes", f)
	}
	for tmpl, want := range map[string]ToolCallFormat{
		"{% for m in messages %}{{ m.content }}{% endfor %}":                    ToolCallsNone,
		"{% if tools %}{{ tools | tojson }}{% endif %}<|python_tag|>":           ToolCallsLlama3,
		"{% if tools %}ipython {\"name\": ..., \"parameters\": ...}{% endif %}": ToolCallsLlama3,
		"{% if tools %}<tool_call>{% endif %}":                                  ToolCallsHermes,
		"no such variable, yet <tool_call> in the text":                         ToolCallsNone,
	} {
		if got := TemplateToolCallFormat(tmpl); got != want {
			t.Errorf("%q: %v, want %v", tmpl, got, want)
		}
	}
}

// TestHermesRoundTripQwen3: what Qwen3's template writes for an assistant
// message with content and two calls parses back to that content and
// those calls, so the message the rollout records renders as the turn.
func TestHermesRoundTripQwen3(t *testing.T) {
	tok := qwen3(t)
	msg := chat.Message{Role: "assistant", Content: "I will search twice."}
	for _, a := range []struct{ name, args string }{{"search_pages", `{"query": "Mount Élan"}`}, {"read_section", `{"section_id": "a:b", "n": [1, 2.5]}`}} {
		var c chat.ToolCall
		c.Type, c.Function.Name, c.Function.Arguments = "function", a.name, json.RawMessage(a.args)
		msg.ToolCalls = append(msg.ToolCalls, c)
	}
	convo := []chat.Message{{Role: "user", Content: "q"}, msg}
	text, err := tok.ApplyChatTemplate(convo, ChatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, turn, _ := strings.Cut(text, "<|im_start|>assistant\n")
	turn = strings.TrimSuffix(turn, "<|im_end|>\n")
	// Qwen3 writes an empty think block in the last assistant turn.
	turn = strings.TrimPrefix(turn, "<think>\n\n</think>\n\n")
	got := ToolCallsHermes.Parse(turn)
	want := []wantCall{{"search_pages", `{"query": "Mount Élan"}`, ""}, {"read_section", `{"section_id": "a:b", "n": [1, 2.5]}`, ""}}
	checkCalls(t, turn, got, msg.Content, want)
}
