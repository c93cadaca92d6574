package serve

import (
	"encoding/json"
	"testing"

	"github.com/grpo-dev/grpo/tokenizer"
)

// TestToolCallsFromText: a Hermes turn becomes OpenAI tool calls (the
// arguments as a JSON string) with the text around them as content; a
// malformed call leaves the whole text as content.
func TestToolCallsFromText(t *testing.T) {
	text := "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
	content, calls, ok := toolCalls(tokenizer.ToolCallsHermes, text, nil, "x")
	if !ok || len(calls) != 1 || calls[0].Function.Name != "get_weather" || calls[0].Function.Arguments != `{"city": "Paris"}` || calls[0].Type != "function" || calls[0].ID == "" {
		t.Fatalf("calls %+v ok %v", calls, ok)
	}
	if content != "Let me check." {
		t.Errorf("content %q", content)
	}
	bad := "<tool_call>\n{\"name\": \n</tool_call>"
	if content, calls, ok := toolCalls(tokenizer.ToolCallsHermes, bad, nil, "x"); ok || calls != nil || content != bad {
		t.Errorf("malformed call: %q %+v %v", content, calls, ok)
	}
	if _, _, ok := toolCalls(tokenizer.ToolCallsHermes, "no calls here", nil, "x"); ok {
		t.Error("plain text read as a call")
	}
}

// TestToolCallsQwenXML: a Qwen3.5 turn's XML call becomes an OpenAI call
// whose arguments are typed by the request's tool schema, as vLLM's
// qwen3_coder parser types them.
func TestToolCallsQwenXML(t *testing.T) {
	tools := []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}`)}
	text := "Checking.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"
	content, calls, ok := toolCalls(tokenizer.ToolCallsQwenXML, text, tools, "x")
	if !ok || len(calls) != 1 || calls[0].Function.Name != "get_weather" || calls[0].Function.Arguments != `{"city": "Paris", "days": 3}` || content != "Checking." {
		t.Fatalf("content %q calls %+v ok %v", content, calls, ok)
	}
}
