package tokenizer

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/chat"
)

// TestParseHarmony reads gpt-oss turns as they follow the generation
// prompt <|start|>assistant, without the stop token that ended them: the
// recipient after the channel (as gpt-oss writes it) or before it (as its
// template renders it), <|constrain|>json or a bare content type, the
// final and analysis channels, preambles, built-in tools and broken calls.
func TestParseHarmony(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       ParsedTurn
	}{
		{"call after analysis, recipient after the channel",
			`<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}`,
			ParsedTurn{Reasoning: "Need the weather.", Calls: []ParsedToolCall{{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}}},
		{"recipient before the channel, bare content type, ended by <|call|>",
			` to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Oslo", "days": 2}<|call|>`,
			ParsedTurn{Calls: []ParsedToolCall{{Name: "get_weather", Arguments: json.RawMessage(`{"city": "Oslo", "days": 2}`)}}}},
		{"constrain token without a space",
			`<|channel|>commentary to=functions.ping<|constrain|>json<|message|> {} `,
			ParsedTurn{Calls: []ParsedToolCall{{Name: "ping", Arguments: json.RawMessage(`{}`)}}}},
		{"empty arguments",
			`<|channel|>commentary to=functions.ping <|constrain|>json<|message|>`,
			ParsedTurn{Calls: []ParsedToolCall{{Name: "ping", Arguments: json.RawMessage(`{}`)}}}},
		{"final answer with analysis",
			"<|channel|>analysis<|message|>2+2=4<|end|><|start|>assistant<|channel|>final<|message|>It is 4.",
			ParsedTurn{Content: "It is 4.", Reasoning: "2+2=4"}},
		{"final answer ended by <|return|>, stray text after it",
			"<|channel|>final<|message|>Done.<|return|> trailing",
			ParsedTurn{Content: "Done."}},
		{"preamble and two calls",
			`<|channel|>commentary<|message|>Checking both.<|end|><|start|>assistant<|channel|>commentary to=functions.a <|constrain|>json<|message|>{"x": 1}<|call|><|start|>assistant<|channel|>commentary to=functions.b json<|message|>{"y": [2]}`,
			ParsedTurn{Content: "Checking both.", Calls: []ParsedToolCall{
				{Name: "a", Arguments: json.RawMessage(`{"x": 1}`)}, {Name: "b", Arguments: json.RawMessage(`{"y": [2]}`)}}}},
		{"a built-in tool is an error",
			`<|channel|>analysis to=browser.search code<|message|>{"query": "x"}`,
			ParsedTurn{Calls: []ParsedToolCall{{Name: "browser.search", Err: `recipient "browser.search" is not one of the functions; call a tool as to=functions.NAME`}}}},
		{"arguments that are not a JSON object",
			`<|channel|>commentary to=functions.f <|constrain|>json<|message|>{"a": `,
			ParsedTurn{Calls: []ParsedToolCall{{Name: "f", Err: `call of "f": its message must be a JSON object of arguments`}}}},
		{"non-JSON content type",
			`<|channel|>commentary to=functions.f <|constrain|>python<|message|>print(1)`,
			ParsedTurn{Calls: []ParsedToolCall{{Name: "f", Err: `call of "f" has content type "python"; write its arguments as <|constrain|>json`}}}},
		{"call cut off before its message",
			`<|channel|>commentary to=functions.f <|constrain|>json`,
			ParsedTurn{Content: `<|channel|>commentary to=functions.f <|constrain|>json`}},
		{"call header cut off after a message",
			`<|channel|>analysis<|message|>go<|end|><|start|>assistant<|channel|>commentary to=functions.f`,
			ParsedTurn{Reasoning: "go", Calls: []ParsedToolCall{{Name: "f", Err: `call of "f" has no <|message|> with its arguments`}}}},
		{"the model writing a tool's answer: dropped",
			`<|channel|>commentary to=functions.f json<|message|>{}<|call|><|start|>functions.f to=assistant<|channel|>commentary<|message|>"made up"<|end|><|start|>assistant<|channel|>final<|message|>ok`,
			ParsedTurn{Content: "ok", Calls: []ParsedToolCall{{Name: "f", Arguments: json.RawMessage(`{}`)}}}},
		{"no harmony at all", "just text", ParsedTurn{Content: "just text"}},
		{"the model writes the prompt's <|start|>assistant again, then opens a message it does not finish",
			"<|start|>assistant<|channel|>final<|message|>ok<|end|><|start|>assistant",
			ParsedTurn{Content: "ok"}},
	} {
		got := ToolCallsHarmony.Parse(c.text)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

// TestHarmonyTemplateFormat: gpt-oss's template is told apart from the
// others by what it writes.
func TestHarmonyTemplateFormat(t *testing.T) {
	if f := TemplateToolCallFormat(gptossTemplate(t)); f != ToolCallsHarmony {
		t.Fatalf("gpt-oss's template: %v, want %v", f, ToolCallsHarmony)
	}
}

// TestHarmonyParsesTemplateRendering: a tool-call turn as gpt-oss's
// template renders it (after the generation prompt) reads back as the
// message it was rendered from.
func TestHarmonyParsesTemplateRendering(t *testing.T) {
	args := json.RawMessage(`{"city": "Zürich", "days": 3}`)
	call := chat.Message{Role: "assistant", Content: "Look it up.", ToolCalls: []chat.ToolCall{{Type: "function"}}}
	call.ToolCalls[0].Function.Name, call.ToolCalls[0].Function.Arguments = "get_weather", args
	msgs := []chat.Message{{Role: "user", Content: "Weather?"}, call}
	tools := []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "get_weather", "description": "d", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}`)}
	full, err := RenderChatTemplate(gptossTemplate(t), msgs, ChatOptions{Tools: tools}, nil)
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := RenderChatTemplate(gptossTemplate(t), msgs[:1], ChatOptions{Tools: tools, AddGenerationPrompt: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	turn, ok := strings.CutPrefix(full, prompt)
	if !ok {
		t.Fatalf("the turn does not follow the prompt:\n%q\n%q", prompt, full)
	}
	got := ToolCallsHarmony.Parse(strings.TrimSuffix(turn, harmonyCall))
	want := ParsedTurn{Reasoning: "Look it up.", Calls: []ParsedToolCall{{Name: "get_weather", Arguments: args}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %+v\nwant %+v", turn, got, want)
	}
}
