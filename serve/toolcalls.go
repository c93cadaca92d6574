package serve

import (
	"encoding/json"
	"fmt"

	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
)

// FinishToolCalls is the finish reason of a turn that ended in tool calls,
// as OpenAI reports it.
const FinishToolCalls = "tool_calls"

// toolCalls reads a finished turn's text with the model's tool-call parser
// (vLLM's --tool-call-parser, chosen here from the chat template: Hermes
// for Qwen2.5/3, qwen3_coder's XML for Qwen3.5, Llama 3's JSON), typing
// XML values by the request's tools, harmony's channels for gpt-oss). It
// returns the content left, the reasoning the format sets apart (harmony's
// analysis channel) and the calls, or ok false when the text holds no
// well-formed call: then the whole text is the content, as a server
// without a parser would return it.
func toolCalls(f tokenizer.ToolCallFormat, text string, tools []json.RawMessage, id string) (content, reasoning string, calls []endpoints.ToolCallWire, ok bool) {
	parsed := f.ParseWithTools(text, tools)
	if len(parsed.Calls) == 0 {
		return text, "", nil, false
	}
	for k, c := range parsed.Calls {
		if c.Err != "" {
			return text, "", nil, false
		}
		var w endpoints.ToolCallWire
		w.ID, w.Type = fmt.Sprintf("call-%s-%d", id, k), "function"
		w.Function.Name, w.Function.Arguments = c.Name, string(c.Arguments)
		calls = append(calls, w)
	}
	return parsed.Content, parsed.Reasoning, calls, true
}

// parsesTools reports whether a chat request's output is read for tool
// calls: it offers tools, does not forbid them, and the template's format
// has a parser.
func (s *Server) parsesTools(req *chatRequest) bool {
	return len(req.Tools) > 0 && string(req.ToolChoice) != `"none"` && s.tok.ToolCallFormat() != tokenizer.ToolCallsNone
}

// assistantMessage is a finished choice's message: its text, or the tool
// calls in it when the request parses them; a gpt-oss (harmony) turn
// without calls is its final channel, the analysis as reasoning_content,
// as vLLM answers for gpt-oss. (A stream sends the text as it comes.)
func (s *Server) assistantMessage(o *output, parse bool, tools []json.RawMessage, id string) (endpoints.ChatMessage, string) {
	text := s.visible(o, 0)
	msg := endpoints.ChatMessage{Role: "assistant", Content: &text}
	finish := o.Finish
	if parse && o.Finish == sampler.FinishStop {
		if content, reasoning, calls, ok := toolCalls(s.tok.ToolCallFormat(), text, tools, id); ok {
			msg.ToolCalls, finish = calls, FinishToolCalls
			msg.Content = nil
			if content != "" {
				msg.Content = &content
			}
			if reasoning != "" {
				msg.ReasoningContent = &reasoning
			}
		}
	}
	if f := s.tok.ToolCallFormat(); f == tokenizer.ToolCallsHarmony && msg.ToolCalls == nil {
		turn := f.Parse(text)
		msg.Content = &turn.Content
		if turn.Reasoning != "" {
			msg.ReasoningContent = &turn.Reasoning
		}
	}
	return msg, finish
}
