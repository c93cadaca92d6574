package rollout

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
)

// agentRequest is the part of a chat completion request the
// interception endpoint reads. Sampling parameters (temperature,
// max_tokens, ...) and tool_choice are ignored: the run's [sampling]
// generates every turn, so that all rollouts are sampled alike, and the
// model calls tools when it does.
type agentRequest struct {
	Model    string            `json:"model"`
	Messages []json.RawMessage `json:"messages"`
	Stream   bool              `json:"stream"`
	N        *int              `json:"n"`
	Tools    []json.RawMessage `json:"tools"`
}

// agentMessage is a request message: content is a string, null, or a
// list of parts, of which only text parts are read.
type agentMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ReasoningContent *string         `json:"reasoning_content"`
	ToolCalls        []chat.ToolCall `json:"tool_calls"`
	Name             string          `json:"name"`
	ToolCallID       string          `json:"tool_call_id"`
}

// decodeAgentRequest returns a request's messages, tools (OpenAI function
// definitions, as the chat template takes them) and model, or one line
// saying what the endpoint cannot serve and what to do instead.
func decodeAgentRequest(body []byte) (*agentCall, string, error) {
	var req agentRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, "", fmt.Errorf("the request is not a chat completion request: %v", err)
	}
	switch {
	case req.Stream:
		return nil, "", errors.New("stream: true is not served by the interception endpoint; call with stream false")
	case req.N != nil && *req.N != 1:
		return nil, "", fmt.Errorf("n = %d: the interception endpoint generates one choice per request; call with n = 1", *req.N)
	case len(req.Messages) == 0:
		return nil, "", errors.New("messages is empty; send the conversation so far")
	}
	for i, t := range req.Tools {
		if _, err := env.ParseToolSchema(t); err != nil {
			return nil, "", fmt.Errorf("tools[%d]: %v", i, err)
		}
	}
	msgs := make([]chat.Message, len(req.Messages))
	for i, raw := range req.Messages {
		var m agentMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, "", fmt.Errorf("messages[%d]: %v", i, err)
		}
		if m.Role == "" {
			return nil, "", fmt.Errorf("messages[%d] has no role", i)
		}
		text, err := contentText(m.Content)
		if err != nil {
			return nil, "", fmt.Errorf("messages[%d].content: %v", i, err)
		}
		msgs[i] = chat.Message{Role: m.Role, Content: text, ReasoningContent: m.ReasoningContent,
			ToolCalls: m.ToolCalls, Name: m.Name, ToolCallID: m.ToolCallID}
	}
	return &agentCall{messages: msgs, tools: req.Tools, answer: make(chan agentAnswer, 1)}, req.Model, nil
}

// contentText reads a message's content: a string, null, or text parts
// joined (OpenAI's list form).
func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("want a string or a list of text parts")
	}
	out := ""
	for _, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("part of type %q: only text parts are served", p.Type)
		}
		out += p.Text
	}
	return out, nil
}
