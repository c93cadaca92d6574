package rollout

import (
	"context"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
)

// TestGLMToolTurn: with GLM-4.5's template the tool loop reads a
// <tool_call>NAME<arg_key>… call (its integer arguments typed by the
// schema, so add's pass the schema check), generation stops on
// <|observation|> and <|user|> without a generation_config.json, and the
// tokens appended after the turn are the tool responses and the next
// generation prompt exactly as the template renders them after the
// <|observation|> the model wrote.
func TestGLMToolTurn(t *testing.T) {
	tok, err := tokenizer.Load("../testdata/tokenizer/glm45/tiny")
	if err != nil {
		t.Fatal(err)
	}
	stops := map[int32]bool{}
	for _, id := range sampler.StopTokenIDs(tok) {
		stops[id] = true
	}
	for _, s := range []string{"<|observation|>", "<|user|>", "<|endoftext|>"} {
		if id, _ := tok.TokenID(s); !stops[id] {
			t.Errorf("%s does not stop generation", s)
		}
	}
	b, err := newToolBox(tok, newFactsEnv(t, 2))
	if err != nil {
		t.Fatal(err)
	}
	if b.format != tokenizer.ToolCallsGLM {
		t.Fatalf("format %v, want %v", b.format, tokenizer.ToolCallsGLM)
	}
	sampled := "\n<think>add them</think>\nAdding.\n<tool_call>add\n<arg_key>a</arg_key>\n<arg_value>2</arg_value>\n<arg_key>b</arg_key>\n<arg_value>3</arg_value>\n</tool_call>"
	tt := b.run(context.Background(), b.tools, sampled)
	if tt.total != 1 || tt.errors != 0 || tt.results[0].Content != "5" || string(tt.assistant.ToolCalls[0].Function.Arguments) != `{"a": 2, "b": 3}` {
		t.Fatalf("turn %+v", tt)
	}
	conv := append(factsPrompt(), tt.assistant)
	opts := tokenizer.ChatOptions{Tools: b.schemas}
	got, err := replyText(tok.ApplyChatTemplate, conv, tt.results, "<|observation|>", opts, b.format)
	if err != nil {
		t.Fatal(err)
	}
	conv = append(conv, tt.results...)
	full, err := tok.ApplyChatTemplate(conv, tokenizer.ChatOptions{Tools: b.schemas, AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	want := full[strings.LastIndex(full, "<|observation|>")+len("<|observation|>"):]
	if got != want || want != "\n<tool_response>\n5\n</tool_response><|assistant|>" {
		t.Errorf("reply:\n got %q\nwant %q", got, want)
	}
}
