package rollout

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/grpo-dev/grpo/chat"
)

func ids(xs ...int32) []int32 { return xs }

// TestAgentSamplesExtendAndRewrite: calls that extend the last call's
// tokens make one sample (the new prompt tokens as context), a call that
// rewrites history starts another, and a call that goes back to the
// first conversation extends its sample again (the longest prefix).
func TestAgentSamplesExtendAndRewrite(t *testing.T) {
	calls := []AgentCall{
		{Prompt: ids(1, 2, 3), Completion: ids(10, 11), Logprobs: []float32{-1, -2}},
		{Prompt: ids(1, 2, 3, 10, 11, 4, 5), Completion: ids(12), Logprobs: []float32{-3}},
		{Prompt: ids(1, 2, 7), Completion: ids(13), Logprobs: []float32{-4}}, // rewritten
		{Prompt: ids(1, 2, 3, 10, 11, 4, 5, 12, 6), Completion: ids(14), Logprobs: []float32{-5}},
	}
	got := agentSamples(calls)
	want := []TokenSample{
		{PromptTokens: ids(1, 2, 3), Tokens: ids(10, 11, 4, 5, 12, 6, 14),
			ModelMask: []bool{true, true, false, false, true, false, true},
			Logprobs:  []float32{-1, -2, 0, 0, -3, 0, -5}},
		{PromptTokens: ids(1, 2, 7), Tokens: ids(13), ModelMask: []bool{true}, Logprobs: []float32{-4}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("samples\n got %+v\nwant %+v", got, want)
	}
	// Every call's tokens are its sample's, where the call made them.
	for i, c := range calls {
		s := got[0]
		if i == 2 {
			s = got[1]
		}
		full := append(slices.Clone(s.PromptTokens), s.Tokens...)
		whole := append(slices.Clone(c.Prompt), c.Completion...)
		if !slices.Equal(full[:len(whole)], whole) {
			t.Errorf("call %d: tokens %v are not the start of its sample %v", i, whole, full)
		}
	}
	if own := agentSampleOf(got, calls[3]); own != 0 {
		t.Errorf("the last call's sample = %d, want 0", own)
	}
}

func TestConversationExtends(t *testing.T) {
	sys := chat.Message{Role: "system", Content: "s"}
	user := chat.Message{Role: "user", Content: "q"}
	turn := chat.Message{Role: "assistant", Content: "<think>\nhm\n</think>\n\nA"}
	conv := []chat.Message{sys, user, turn}
	next := chat.Message{Role: "user", Content: "more"}
	reasoning := "hm"
	for _, c := range []struct {
		name string
		req  []chat.Message
		ok   bool
	}{
		{"restated", []chat.Message{sys, user, turn, next}, true},
		{"reasoning split out", []chat.Message{sys, user, {Role: "assistant", Content: "A", ReasoningContent: &reasoning}, next}, true},
		{"trimmed", []chat.Message{sys, user, {Role: "assistant", Content: "<think>hm</think>A "}, next}, true},
		{"reasoning dropped", []chat.Message{sys, user, {Role: "assistant", Content: "A"}, next}, false},
		{"turn edited", []chat.Message{sys, user, {Role: "assistant", Content: "B"}, next}, false},
		{"nothing new", conv, false},
		{"shorter", []chat.Message{sys, next}, false},
		{"an assistant message added", []chat.Message{sys, user, turn, next, {Role: "assistant", Content: "x"}}, false},
	} {
		reply, ok := conversationExtends(conv, c.req)
		if ok != c.ok {
			t.Errorf("%s: extends = %v, want %v", c.name, ok, c.ok)
		}
		if ok && !reflect.DeepEqual(reply, []chat.Message{next}) {
			t.Errorf("%s: reply = %v, want the new user message", c.name, reply)
		}
	}
}

// TestConversationExtendsToolCalls: a turn's tool calls restated with
// their arguments as a JSON string (OpenAI's form) are the same calls;
// other arguments or a dropped call rewrite the turn.
func TestConversationExtendsToolCalls(t *testing.T) {
	call := func(args string) chat.ToolCall {
		var c chat.ToolCall
		c.Type, c.Function.Name, c.Function.Arguments = "function", "add", json.RawMessage(args)
		return c
	}
	user := chat.Message{Role: "user", Content: "q"}
	conv := []chat.Message{user, {Role: "assistant", ToolCalls: []chat.ToolCall{call(`{"a": 1}`)}}}
	result := chat.Message{Role: "tool", Content: "2", ToolCallID: "call_0"}
	for args, want := range map[string]bool{`"{\"a\":1}"`: true, `{"a":1}`: true, `"{\"a\": 2}"`: false} {
		req := []chat.Message{user, {Role: "assistant", ToolCalls: []chat.ToolCall{call(args)}}, result}
		if _, ok := conversationExtends(conv, req); ok != want {
			t.Errorf("arguments %s: extends = %v, want %v", args, ok, want)
		}
	}
	if _, ok := conversationExtends(conv, []chat.Message{user, {Role: "assistant"}, result}); ok {
		t.Error("a turn restated without its call extends the conversation")
	}
}
