package serve

import (
	"testing"

	"github.com/grpo-dev/grpo/tokenizer"
)

// TestToolCallsFromText: a Hermes turn becomes OpenAI tool calls (the
// arguments as a JSON string) with the text around them as content; a
// malformed call leaves the whole text as content.
func TestToolCallsFromText(t *testing.T) {
	text := "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
	content, calls, ok := toolCalls(tokenizer.ToolCallsHermes, text, "x")
	if !ok || len(calls) != 1 || calls[0].Function.Name != "get_weather" || calls[0].Function.Arguments != `{"city": "Paris"}` || calls[0].Type != "function" || calls[0].ID == "" {
		t.Fatalf("calls %+v ok %v", calls, ok)
	}
	if content != "Let me check." {
		t.Errorf("content %q", content)
	}
	bad := "<tool_call>\n{\"name\": \n</tool_call>"
	if content, calls, ok := toolCalls(tokenizer.ToolCallsHermes, bad, "x"); ok || calls != nil || content != bad {
		t.Errorf("malformed call: %q %+v %v", content, calls, ok)
	}
	if _, _, ok := toolCalls(tokenizer.ToolCallsHermes, "no calls here", "x"); ok {
		t.Error("plain text read as a call")
	}
}
