package tokenizer

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/chat"
)

var glmTools = []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "search", "parameters": {"type": "object", "properties": {
	"query": {"type": "string"}, "limit": {"type": "number"}, "filters": {"type": "object"}, "tags": {"type": "array"}, "code": {"type": "string"}, "flag": {"type": "boolean"}}}}}`)}

// TestParseGLM reads GLM-4.5 turns: the checkpoint's layout (a newline
// after the name and around each pair) and llama.cpp's (none after the
// name), values typed by the schema as vLLM's glm45 parser types them,
// thinking, and broken blocks.
func TestParseGLM(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       ParsedTurn
	}{
		{"checkpoint layout, typed values",
			"<think>need it</think>\nLet me search.\n<tool_call>search\n<arg_key>query</arg_key>\n<arg_value> 12 </arg_value>\n<arg_key>limit</arg_key>\n<arg_value>2.50</arg_value>\n<arg_key>filters</arg_key>\n<arg_value>{\"a\":[1,null]}</arg_value>\n<arg_key>flag</arg_key>\n<arg_value>True</arg_value>\n<arg_key>other</arg_key>\n<arg_value>None</arg_value>\n<arg_key>code</arg_key>\n<arg_value>{\"x\": 1}</arg_value>\n</tool_call>",
			ParsedTurn{Content: "<think>need it</think>\nLet me search.", Calls: []ParsedToolCall{{Name: "search",
				Arguments: json.RawMessage(`{"query": "12", "limit": 2.5, "filters": {"a": [1, null]}, "flag": true, "other": null, "code": "{\"x\": 1}"}`)}}}},
		{"llama.cpp layout, two calls, no arguments",
			"<tool_call>search<arg_key>tags</arg_key>\n<arg_value>[\"x\", \"é\"]</arg_value></tool_call>\n<tool_call>ping</tool_call>",
			ParsedTurn{Calls: []ParsedToolCall{{Name: "search", Arguments: json.RawMessage(`{"tags": ["x", "é"]}`)}, {Name: "ping", Arguments: json.RawMessage(`{}`)}}}},
		{"unknown tool: values read as JSON, else text",
			"<tool_call>f\n<arg_key>n</arg_key><arg_value>7</arg_value><arg_key>s</arg_key><arg_value>a b</arg_value></tool_call>",
			ParsedTurn{Calls: []ParsedToolCall{{Name: "f", Arguments: json.RawMessage(`{"n": 7, "s": "a b"}`)}}}},
		{"a call inside the thinking is not a call",
			"<think><tool_call>f</tool_call></think>done", ParsedTurn{Content: "<think><tool_call>f</tool_call></think>done"}},
		{"unclosed block at the end is read",
			"<tool_call>f\n<arg_key>k</arg_key>\n<arg_value>v</arg_value>",
			ParsedTurn{Calls: []ParsedToolCall{{Name: "f", Arguments: json.RawMessage(`{"k": "v"}`)}}}},
		{"a key without a value",
			"<tool_call>f\n<arg_key>k</arg_key>\n</tool_call><tool_call>g</tool_call>",
			ParsedTurn{Calls: []ParsedToolCall{{Err: `argument "k" of "f" has no <arg_value>; write <tool_call>NAME then <arg_key>KEY</arg_key><arg_value>VALUE</arg_value> for each argument, then </tool_call>`}, {Name: "g", Arguments: json.RawMessage(`{}`)}}}},
		{"no name", "<tool_call>\n<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>",
			ParsedTurn{Calls: []ParsedToolCall{{Err: `<tool_call> names no function; write <tool_call>NAME then <arg_key>KEY</arg_key><arg_value>VALUE</arg_value> for each argument, then </tool_call>`}}}},
		{"stray text", "<tool_call>f\nhello</tool_call>",
			ParsedTurn{Calls: []ParsedToolCall{{Err: `unexpected text "hello" in the call of "f", where <arg_key> belongs; write <tool_call>NAME then <arg_key>KEY</arg_key><arg_value>VALUE</arg_value> for each argument, then </tool_call>`}}}},
	} {
		got := ToolCallsGLM.ParseWithTools(c.text, glmTools)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
	if f := TemplateToolCallFormat(glm45Template(t)); f != ToolCallsGLM {
		t.Errorf("GLM-4.5's template: %v, want %v", f, ToolCallsGLM)
	}
}

// TestGLMParsesTemplateRendering: calls as the GLM-4.5 template renders
// them read back as the arguments they were rendered from, the values
// typed by the schema (a string stays a string, numbers, objects and
// lists come back as JSON).
func TestGLMParsesTemplateRendering(t *testing.T) {
	args := json.RawMessage(`{"query": "a <b> & c\nline", "limit": 2.5, "filters": {"lang": "fr", "n": [1, null]}, "tags": ["x", "é"], "code": "123"}`)
	call := chat.Message{Role: "assistant", Content: "Searching.", ToolCalls: []chat.ToolCall{{Type: "function"}}}
	call.ToolCalls[0].Function.Name, call.ToolCalls[0].Function.Arguments = "search", args
	msgs := []chat.Message{{Role: "user", Content: "Find it."}, call}
	full, err := RenderChatTemplate(glm45Template(t), msgs, ChatOptions{Tools: glmTools}, nil)
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := RenderChatTemplate(glm45Template(t), msgs[:1], ChatOptions{Tools: glmTools, AddGenerationPrompt: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	turn, ok := strings.CutPrefix(full, prompt)
	if !ok {
		t.Fatalf("the turn does not follow the prompt:\n%q\n%q", prompt, full)
	}
	got := ToolCallsGLM.ParseWithTools(turn, glmTools)
	want := ParsedTurn{Content: "\n<think></think>\nSearching.", Calls: []ParsedToolCall{{Name: "search", Arguments: args}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %+v\nwant %+v", turn, got, want)
	}
}
