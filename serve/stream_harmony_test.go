package serve

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/tokenizer"
)

// TestHarmonyStream streams gpt-oss turns token by token through the chat
// stream's events: the analysis arrives as reasoning_content deltas and
// the final channel as content deltas, never a channel marker or a
// half-generated header, adding up exactly to the non-streamed message;
// a turn ending in a call to=functions.get_weather streams its reasoning
// and sends the call whole in the last event with finish_reason
// tool_calls.
func TestHarmonyStream(t *testing.T) {
	tok, err := tokenizer.Load("../testdata/tokenizer/gptoss/tiny")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{tok: tok}
	tool := json.RawMessage(`{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}`)
	for _, c := range []struct {
		name, text, end string
		tools           bool
		reasoning, cont string
		call            string
	}{
		{"answer", "<|channel|>analysis<|message|>User asks 2+2. Easy.<|end|><|start|>assistant<|channel|>final<|message|>It is 4.", "<|return|>", false,
			"User asks 2+2. Easy.", "It is 4.", ""},
		{"two analyses and a preamble", "<|channel|>analysis<|message|>first<|end|><|start|>assistant<|channel|>analysis<|message|>second<|end|><|start|>assistant<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant<|channel|>final<|message|>Done.", "<|return|>", false,
			"first\nsecond", "Checking.\nDone.", ""},
		{"tool call", "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}", "<|call|>", true,
			"Need the weather.", "", "get_weather"},
	} {
		t.Run(c.name, func(t *testing.T) {
			end, _ := tok.TokenID(c.end)
			toks := append(tok.Encode(c.text), end)
			k := &chatStream{s: s, plan: &chatPlan{top: -1}, id: "x", name: "m", parse: c.tools, harmony: make([]harmonySent, 1)}
			if c.tools {
				k.plan.req.Tools = []json.RawMessage{tool}
			}
			var reasoning, content strings.Builder
			var last chatChunkChoice
			early := 0 // events with text before the turn ends
			for n := 1; n <= len(toks); n++ {
				o := &output{Tokens: toks[:n]}
				if n == len(toks) {
					o.Finish, o.StopToken = "stop", true
				}
				ev, ok := k.piece(0, o, "", n-1)
				if !ok {
					continue
				}
				ch := ev.(chatChunk).Choices[0]
				for _, d := range []*string{ch.Delta.ReasoningContent, ch.Delta.Content} {
					if d != nil && strings.Contains(*d, "<|") {
						t.Fatalf("after %d tokens a delta holds a marker: %q", n, *d)
					}
				}
				if ch.Delta.ReasoningContent != nil {
					reasoning.WriteString(*ch.Delta.ReasoningContent)
				}
				if n < len(toks) && (ch.Delta.ReasoningContent != nil || ch.Delta.Content != nil) {
					early++
				}
				if ch.Delta.Content != nil {
					content.WriteString(*ch.Delta.Content)
				}
				last = ch
			}
			if reasoning.String() != c.reasoning || content.String() != c.cont {
				t.Errorf("streamed reasoning %q, content %q; want %q, %q", reasoning.String(), content.String(), c.reasoning, c.cont)
			}
			o := &output{Tokens: toks, Finish: "stop", StopToken: true}
			msg, finish := s.assistantMessage(o, c.tools, k.plan.req.Tools, "x-0")
			if (msg.ReasoningContent == nil) != (c.reasoning == "") || msg.ReasoningContent != nil && *msg.ReasoningContent != reasoning.String() {
				t.Errorf("non-streamed reasoning %v, streamed %q", msg.ReasoningContent, reasoning.String())
			}
			if msg.Content != nil && *msg.Content != content.String() {
				t.Errorf("non-streamed content %q, streamed %q", *msg.Content, content.String())
			}
			if early < 3 {
				t.Errorf("only %d events carried text before the turn ended: not streamed", early)
			}
			if last.FinishReason == nil || *last.FinishReason != finish {
				t.Errorf("last event's finish %v, want %q", last.FinishReason, finish)
			}
			if c.call == "" {
				if len(last.Delta.ToolCalls) != 0 {
					t.Errorf("tool calls %+v", last.Delta.ToolCalls)
				}
				return
			}
			if len(last.Delta.ToolCalls) != 1 || last.Delta.ToolCalls[0].Function.Name != c.call || finish != FinishToolCalls ||
				last.Delta.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` {
				t.Errorf("last event's calls %+v, finish %q", last.Delta.ToolCalls, finish)
			}
		})
	}
}
