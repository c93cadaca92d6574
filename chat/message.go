// Package chat owns the chat message type shared by templates,
// environments and rubrics, so a conversation passes from a dataset to
// the chat template and on to a reward function without conversion.
package chat

import "encoding/json"

// Message is one turn of a conversation in the OpenAI chat format, shaped
// like the dicts transformers' apply_chat_template takes. Role is
// "system", "user", "assistant" or "tool". Only Role and Content are
// always written as JSON, so a plain message encodes as
// {"role": ..., "content": ...}.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ReasoningContent, when set, is the turn's thinking; Qwen3's template
	// otherwise splits it out of Content's <think>…</think>.
	ReasoningContent *string    `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
	// Name and ToolCallID identify tool results in templates that use them.
	Name       string `json:"name,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ToolCall is an assistant's call of a tool.
type ToolCall struct {
	Type     string `json:"type,omitempty"`
	Function struct {
		Name string `json:"name"`
		// Arguments is a JSON object, or a JSON string holding the
		// arguments already serialized (templates print those as they are).
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}
