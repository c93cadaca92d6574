package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/chat"
)

// xmlTools are the schemas the XML cases are typed by: one property per
// rule of vLLM's qwen3_coder conversion.
var xmlTools = []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
	"s": {"type": "string"}, "e": {"type": "string", "enum": ["a", "b"]}, "ns": {"anyOf": [{"type": "string"}, {"type": "null"}]},
	"i": {"type": "integer"}, "n": {"type": "number"}, "b": {"type": "boolean"}, "o": {"type": "object"}, "a": {"type": "array"},
	"il": {"type": ["integer", "null"]}, "untyped": {"description": "no type"}}}}}`),
	json.RawMessage(`{"name": "g", "parameters": {"properties": {"k": {"type": "INT64"}}}}`)}

func xmlCall(name string, params ...string) string {
	var b strings.Builder
	b.WriteString("<tool_call>\n<function=" + name + ">\n")
	for i := 0; i+1 < len(params); i += 2 {
		b.WriteString("<parameter=" + params[i] + ">\n" + params[i+1] + "\n</parameter>\n")
	}
	b.WriteString("</function>\n</tool_call>")
	return b.String()
}

func TestParseQwenXMLTypes(t *testing.T) {
	for _, c := range []struct{ param, text, want string }{
		{"s", "line one\n  line two <b>&</b>", `"line one\n  line two <b>&</b>"`},
		{"s", "42", `"42"`},
		{"s", "null", `"null"`}, // a string that does not admit null keeps the text
		{"e", "a", `"a"`},
		{"ns", "None", `null`},
		{"ns", "text", `"text"`},
		{"i", " -17 ", `-17`},
		{"i", "123456789012345678901234567890", `123456789012345678901234567890`},
		{"i", "2.5", `"2.5"`}, // not an integer: the text
		{"i", "None", `null`},
		{"n", "2.5", `2.5`},
		{"n", "3.0", `3`}, // whole numbers are integers (vLLM)
		{"n", "1e-7", `1e-07`},
		{"n", "1e20", `100000000000000000000`},
		{"n", "inf", `"inf"`},
		{"n", "0x10", `"0x10"`},
		{"b", "True", `true`},
		{"b", "false", `false`},
		{"b", "yes", `false`}, // vLLM: anything but "true" is false
		{"o", `{"z":1,"a":[1.0,"é",null],"z":2}`, `{"z": 2, "a": [1.0, "é", null]}`},
		{"o", "{'k': 1}", `"{'k': 1}"`}, // Python literal, not JSON: the text
		{"a", `[1, -0, 2E2]`, `[1, 0, 200.0]`},
		{"a", `[1] [2]`, `"[1] [2]"`},
		{"il", "7", `7`},
		{"il", "null", `null`},
		{"untyped", "7", `"7"`},
		{"unknown", "7", `"7"`}, // not in the schema
	} {
		text := xmlCall("f", c.param, c.text)
		got := ToolCallsQwenXML.ParseWithTools(text, xmlTools)
		checkCalls(t, text, got, "", []wantCall{{"f", `{"` + c.param + `": ` + c.want + `}`, ""}})
	}
	// Tool g: a bare function object, an upper-case type name.
	text := xmlCall("g", "k", "5")
	checkCalls(t, text, ToolCallsQwenXML.ParseWithTools(text, xmlTools), "", []wantCall{{"g", `{"k": 5}`, ""}})
	// Without schemas every value is text.
	text = xmlCall("f", "i", "5", "b", "True")
	checkCalls(t, text, ToolCallsQwenXML.Parse(text), "", []wantCall{{"f", `{"i": "5", "b": "True"}`, ""}})
}

func TestParseQwenXML(t *testing.T) {
	f1 := xmlCall("f", "s", "x")
	for _, c := range []struct {
		text, content string
		calls         []wantCall
	}{
		{"The answer is 4.", "The answer is 4.", nil},
		{"Let me look.\n\n" + f1, "Let me look.", []wantCall{{"f", `{"s": "x"}`, ""}}},
		{f1 + "\n" + xmlCall("g", "k", "1", "k", "2", "extra", "y"), "",
			[]wantCall{{"f", `{"s": "x"}`, ""}, {"g", `{"k": 2, "extra": "y"}`, ""}}},
		// No parameters; odd spacing between tags.
		{"<tool_call><function=f></function></tool_call>", "", []wantCall{{"f", `{}`, ""}}},
		{"<tool_call>\n<function=f>\n<parameter=s>v</parameter>  <parameter=i>\n3\n</parameter>\n\n</function>  \n</tool_call>", "",
			[]wantCall{{"f", `{"s": "v", "i": 3}`, ""}}},
		// A value holding the format's own closing tags, as code about it would.
		{xmlCall("f", "s", "a</parameter> b\n</parameter>x", "i", "1"), "", []wantCall{{"f", `{"s": "a</parameter> b\n</parameter>x", "i": 1}`, ""}}},
		// A value holding a whole literal call: its tags pair up inside.
		{xmlCall("f", "s", "Write:\n"+xmlCall("g", "k", "v"), "i", "1"), "", []wantCall{{"f", `{"s": "Write:\n<tool_call>\n<function=g>\n<parameter=k>\nv\n</parameter>\n</function>\n</tool_call>", "i": 1}`, ""}}},
		// Left open at the end: read when the function is complete.
		{"ok\n" + strings.TrimSuffix(f1, "</tool_call>"), "ok", []wantCall{{"f", `{"s": "x"}`, ""}}},
		// Calls inside the thinking are reasoning.
		{"<think>\nmaybe " + f1 + "\n</think>\n\nNo call.", "<think>\nmaybe " + f1 + "\n</think>\n\nNo call.", nil},
		{"<think>\nplan\n</think>\n\n" + f1, "<think>\nplan\n</think>", []wantCall{{"f", `{"s": "x"}`, ""}}},
		// Malformed blocks: a clear error each, and the next block still read.
		{"<tool_call>\n<function=>\n</function>\n</tool_call>" + f1, "", []wantCall{{"", "", "no function name"}, {"f", `{"s": "x"}`, ""}}},
		{"<tool_call>\n{\"name\": \"f\"}\n</tool_call>\n" + f1, "", []wantCall{{"", "", "does not start with <function=NAME>"}, {"f", `{"s": "x"}`, ""}}},
		{"<tool_call>\n<function=f\n<parameter=s>\nx\n</parameter>", "", []wantCall{{"", "", "<function= is not closed by '>'"}}},
		{"<tool_call>\n<function=my tool>\n</function>\n</tool_call>", "", []wantCall{{"", "", `"my tool" is not a function name`}}},
		{"<tool_call>\n<function=f>\n<parameter=s>\nx\n<parameter=i>\n1\n</function>\n</tool_call>", "", []wantCall{{"", "", `parameter "s" of "f" is not closed by </parameter>`}}},
		{"<tool_call>\n<function=f>\n<parameter=s>\nx\n</parameter>\n", "", []wantCall{{"", "", "<function=f> is not closed by </function>"}}},
		{"<tool_call>\n<function=f>\nx=1\n</function>\n</tool_call>", "", []wantCall{{"", "", `unexpected text "x=1\n</function>\n</to…" inside <function=f>, where <parameter=ARG> or </function> belongs`}}},
		{"<tool_call>\n<function=f>\n</function>\ntrailing\n</tool_call>", "", []wantCall{{"", "", "</function> of \"f\" is not followed by </tool_call>"}}},
		{"<tool_call>\n<function=f>\n<parameter=>\nx\n</parameter>\n</function>\n</tool_call>", "", []wantCall{{"", "", "<parameter=> in \"f\" has no parameter name"}}},
		{"<tool_call>\n<function=f>\n<parameter=s\nx\n</parameter>\n</function>\n</tool_call>", "", []wantCall{{"", "", "<parameter= in \"f\" is not closed by '>'"}}},
		{"<tool_call></tool_call>", "", []wantCall{{"", "", "does not start with <function=NAME>"}}},
		{"<tool_call>", "", []wantCall{{"", "", "does not start with <function=NAME>"}}},
	} {
		checkCalls(t, c.text, ToolCallsQwenXML.ParseWithTools(c.text, xmlTools), c.content, c.calls)
	}
}

// TestQwenXMLRoundTrip: what Qwen3.5's template writes for an assistant
// message with content and two calls (string, number, boolean, null,
// object and list arguments) parses back, with the tools' schemas, to that
// content and those arguments, so the message a rollout records renders as
// the turn the model wrote.
func TestQwenXMLRoundTrip(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(testdata, "qwen35", "chat_template.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	tools := []json.RawMessage{
		json.RawMessage(`{"type": "function", "function": {"name": "search", "parameters": {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "number"}, "exact": {"type": "boolean"}, "filters": {"type": "object"}, "tags": {"type": "array"}, "cursor": {"anyOf": [{"type": "string"}, {"type": "null"}]}, "page": {"type": "integer"}}}}}`),
		json.RawMessage(`{"type": "function", "function": {"name": "read", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}`),
	}
	want := []wantCall{
		{"search", `{"query": "Mount Élan\n  </b> & more", "limit": 2.5, "exact": true, "filters": {"lang": "fr", "nested": {"k": [1, null, 1e-07]}}, "tags": ["a", "é"], "cursor": null, "page": 3}`, ""},
		{"read", `{"path": "True"}`, ""},
	}
	msg := chat.Message{Role: "assistant", Content: "I will search, then read."}
	for _, w := range want {
		var c chat.ToolCall
		c.Type, c.Function.Name, c.Function.Arguments = "function", w.name, json.RawMessage(w.args)
		msg.ToolCalls = append(msg.ToolCalls, c)
	}
	convo := []chat.Message{{Role: "user", Content: "q"}, msg}
	text, err := RenderChatTemplate(string(src), convo, ChatOptions{Tools: tools}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := TemplateToolCallFormat(string(src)); got != ToolCallsQwenXML {
		t.Fatalf("Qwen3.5's template: format %v, want qwen3_coder", got)
	}
	_, turn, _ := strings.Cut(text, "<|im_start|>assistant\n")
	turn = strings.TrimSuffix(turn, "<|im_end|>\n")
	// The last assistant turn after the query carries its (empty) thinking.
	turn = strings.TrimPrefix(turn, "<think>\n\n</think>\n\n")
	checkCalls(t, turn, ToolCallsQwenXML.ParseWithTools(turn, tools), msg.Content, want)
}
