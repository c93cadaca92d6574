package serve

import (
	"fmt"
	"strings"

	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/tokenizer"
)

// harmonySent is what a gpt-oss choice's stream has sent of its reasoning
// and content.
type harmonySent struct{ reasoning, content string }

// harmonyPiece is a gpt-oss (harmony) choice's stream event, as vLLM
// streams gpt-oss: the turn read so far as the finished answer is read
// (assistantMessage: analysis as reasoning, final and preamble commentary
// as content, joined by newlines), each sent as the part the stream has
// not sent yet — reasoning_content and content deltas, never the channel
// markers — and the tool calls (messages to=functions.NAME) whole in the
// last event, when the request offered tools. A message counts once its
// header is complete (<|message|>), so a channel name or recipient half
// generated never reaches the client; the deltas add up to the
// non-streamed message exactly.
func (k *chatStream) harmonyPiece(i int, o *output, from int) (any, bool) {
	req := &k.plan.req
	toks := o.Tokens[from:]
	c := chatChunkChoice{Index: i, FinishReason: finishOf(o)}
	var reasoning, content string
	if o.Finish != "" {
		msg, finish := k.s.assistantMessage(o, k.parse, req.Tools, fmt.Sprint(k.id, "-", i))
		c.FinishReason = &finish
		for n, tc := range msg.ToolCalls {
			c.Delta.ToolCalls = append(c.Delta.ToolCalls, chunkToolCall{Index: n, ToolCallWire: tc})
		}
		if msg.Content != nil {
			content = *msg.Content
		}
		if msg.ReasoningContent != nil {
			reasoning = *msg.ReasoningContent
		}
	} else if text := k.s.visible(o, k.hold); strings.Contains(text, "<|message|>") {
		turn := tokenizer.ToolCallsHarmony.Parse(text)
		reasoning, content = turn.Reasoning, turn.Content
	}
	sent := &k.harmony[i]
	if d, ok := strings.CutPrefix(reasoning, sent.reasoning); ok && d != "" {
		c.Delta.ReasoningContent, sent.reasoning = &d, reasoning
	}
	if d, ok := strings.CutPrefix(content, sent.content); ok && d != "" {
		c.Delta.Content, sent.content = &d, content
	}
	wantToks := len(toks) > 0 && (k.plan.top >= 0 || req.ReturnTokenIDs)
	if c.Delta.ReasoningContent == nil && c.Delta.Content == nil && c.Delta.ToolCalls == nil && !wantToks && o.Finish == "" {
		return nil, false
	}
	if k.plan.top >= 0 && len(toks) > 0 {
		c.Logprobs = &endpoints.ChatLogprobs{Content: k.s.chatLogprobs(o, from, len(o.Tokens))}
	}
	if req.ReturnTokenIDs {
		c.TokenIDs = toks
	}
	return k.chunk(c), true
}
