package serve

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/tokenizer"
)

// TestToolCallsFromText: a Hermes turn becomes OpenAI tool calls (the
// arguments as a JSON string) with the text around them as content; a
// malformed call leaves the whole text as content.
func TestToolCallsFromText(t *testing.T) {
	text := "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
	content, _, calls, ok := toolCalls(tokenizer.ToolCallsHermes, text, nil, "x")
	if !ok || len(calls) != 1 || calls[0].Function.Name != "get_weather" || calls[0].Function.Arguments != `{"city": "Paris"}` || calls[0].Type != "function" || calls[0].ID == "" {
		t.Fatalf("calls %+v ok %v", calls, ok)
	}
	if content != "Let me check." {
		t.Errorf("content %q", content)
	}
	bad := "<tool_call>\n{\"name\": \n</tool_call>"
	if content, _, calls, ok := toolCalls(tokenizer.ToolCallsHermes, bad, nil, "x"); ok || calls != nil || content != bad {
		t.Errorf("malformed call: %q %+v %v", content, calls, ok)
	}
	if _, _, _, ok := toolCalls(tokenizer.ToolCallsHermes, "no calls here", nil, "x"); ok {
		t.Error("plain text read as a call")
	}
}

// TestToolCallsQwenXML: a Qwen3.5 turn's XML call becomes an OpenAI call
// whose arguments are typed by the request's tool schema, as vLLM's
// qwen3_coder parser types them.
func TestToolCallsQwenXML(t *testing.T) {
	tools := []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}`)}
	text := "Checking.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"
	content, _, calls, ok := toolCalls(tokenizer.ToolCallsQwenXML, text, tools, "x")
	if !ok || len(calls) != 1 || calls[0].Function.Name != "get_weather" || calls[0].Function.Arguments != `{"city": "Paris", "days": 3}` || content != "Checking." {
		t.Fatalf("content %q calls %+v ok %v", content, calls, ok)
	}
}

// TestToolCallsHarmony: a gpt-oss turn's call becomes an OpenAI call, its
// analysis the reasoning_content, as vLLM's openai parser returns them.
func TestToolCallsHarmony(t *testing.T) {
	text := `<|channel|>analysis<|message|>Need it.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}`
	content, reasoning, calls, ok := toolCalls(tokenizer.ToolCallsHarmony, text, nil, "x")
	if !ok || len(calls) != 1 || calls[0].Function.Name != "get_weather" || calls[0].Function.Arguments != `{"city": "Paris"}` || content != "" || reasoning != "Need it." {
		t.Fatalf("content %q reasoning %q calls %+v ok %v", content, reasoning, calls, ok)
	}
}

// TestToolCallArgumentsDecoded: a client's assistant turn carries its
// calls' arguments as a string of JSON (OpenAI's wire form); the server
// hands the template the object, as vLLM does, so Qwen3.5's template can
// write one <parameter=…> per key. Arguments that are not JSON are a 400.
func TestToolCallArgumentsDecoded(t *testing.T) {
	var req chatRequest
	body := `{"messages": [{"role": "user", "content": "Weather?"},
		{"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 2}"}},
			{"type": "function", "function": {"name": "now", "arguments": ""}}]},
		{"role": "tool", "content": "18°C"}]}`
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	msgs, apiErr := req.messages()
	if apiErr != nil {
		t.Fatal(apiErr)
	}
	if a, b := string(msgs[1].ToolCalls[0].Function.Arguments), string(msgs[1].ToolCalls[1].Function.Arguments); a != `{"city": "Paris", "days": 2}` || b != `{}` {
		t.Fatalf("arguments %s, %s", a, b)
	}
	tok, err := tokenizer.Load("../testdata/tokenizer/qwen35/tiny")
	if err != nil {
		t.Fatal(err)
	}
	text, err := tok.ApplyChatTemplate(msgs, tokenizer.ChatOptions{AddGenerationPrompt: true})
	if err != nil || !strings.Contains(text, "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n2\n</parameter>\n</function>") {
		t.Fatalf("rendered %q, %v", text, err)
	}
	req.Messages[1].ToolCalls[0].Function.Arguments = json.RawMessage(`"{\"city\": "`)
	if _, apiErr := req.messages(); apiErr == nil || !strings.Contains(apiErr.Error(), "messages[1].tool_calls[0].function.arguments") {
		t.Fatalf("malformed arguments: %v", apiErr)
	}
}

// TestHarmonyAnswer: a finished gpt-oss turn without calls answers with
// its final channel as the content and its analysis as reasoning_content.
func TestHarmonyAnswer(t *testing.T) {
	tok, err := tokenizer.Load("../testdata/tokenizer/gptoss/tiny")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{tok: tok}
	ret, _ := tok.TokenID("<|return|>")
	o := &output{Tokens: append(tok.Encode("<|channel|>analysis<|message|>2+2<|end|><|start|>assistant<|channel|>final<|message|>4"), ret), Finish: "stop", StopToken: true}
	msg, finish := s.assistantMessage(o, false, nil, "x")
	if msg.Content == nil || *msg.Content != "4" || msg.ReasoningContent == nil || *msg.ReasoningContent != "2+2" || finish != "stop" {
		t.Errorf("message %+v, finish %q", msg, finish)
	}
}
