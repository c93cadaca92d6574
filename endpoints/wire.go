package endpoints

import (
	"encoding/json"

	"github.com/grpo-dev/grpo/chat"
)

// ChatRequest is a POST /chat/completions body. Pointer fields are sent
// only when set, so a hosted API sees nothing it would reject; the vLLM
// extras (TopK, MinP, ReturnTokenIDs, ChatTemplateKwargs) are for vLLM and
// grpo serve, since OpenAI's own API refuses fields it does not know.
type ChatRequest struct {
	Model       string            `json:"model"`
	Messages    []chat.Message    `json:"messages"`
	Tools       []json.RawMessage `json:"tools,omitempty"`
	MaxTokens   *int              `json:"max_tokens,omitempty"`
	Temperature *float64          `json:"temperature,omitempty"`
	TopP        *float64          `json:"top_p,omitempty"`
	N           int               `json:"n,omitempty"`
	Stop        []string          `json:"stop,omitempty"`
	// Seed passes a trainer's per-rollout uint64 seed (see Seed); grpo
	// serve seeds the sequence's random stream with it.
	Seed        *Seed `json:"seed,omitempty"`
	Logprobs    bool  `json:"logprobs,omitempty"`
	TopLogprobs int   `json:"top_logprobs,omitempty"`
	Stream      bool  `json:"stream,omitempty"`
	// ReasoningEffort is OpenAI's reasoning_effort ("low", "medium",
	// "high"); vLLM and grpo serve pass it to gpt-oss's chat template.
	ReasoningEffort string `json:"reasoning_effort,omitempty"`

	TopK               *int           `json:"top_k,omitempty"`
	MinP               *float64       `json:"min_p,omitempty"`
	ReturnTokenIDs     bool           `json:"return_token_ids,omitempty"`
	ChatTemplateKwargs map[string]any `json:"chat_template_kwargs,omitempty"`
}

// ChatResponse is a chat completion. PromptTokenIDs and each choice's
// TokenIDs are vLLM's return_token_ids extras.
type ChatResponse struct {
	ID             string       `json:"id"`
	Object         string       `json:"object"`
	Created        int64        `json:"created"`
	Model          string       `json:"model"`
	Choices        []ChatChoice `json:"choices"`
	Usage          *Usage       `json:"usage,omitempty"`
	PromptTokenIDs []int32      `json:"prompt_token_ids,omitempty"`
}

// ChatChoice is one of a chat completion's n choices.
type ChatChoice struct {
	Index        int           `json:"index"`
	Message      ChatMessage   `json:"message"`
	FinishReason string        `json:"finish_reason"`
	Logprobs     *ChatLogprobs `json:"logprobs"`
	// TokenIDs are the generated ids, the stop token included.
	TokenIDs []int32 `json:"token_ids,omitempty"`
}

// ChatMessage is an assistant message as a server returns it: content is
// null when the turn is only tool calls.
type ChatMessage struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	ToolCalls []ToolCallWire `json:"tool_calls,omitempty"`
	// ReasoningContent is the thinking vLLM's reasoning parsers split off.
	ReasoningContent *string `json:"reasoning_content,omitempty"`
}

// Text is the message's content ("" when null).
func (m ChatMessage) Text() string {
	if m.Content == nil {
		return ""
	}
	return *m.Content
}

// ToolCallWire is a tool call as the API writes it: arguments are a JSON
// string.
type ToolCallWire struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// ChatLogprobs are a choice's per-token log-probs.
type ChatLogprobs struct {
	Content []TokenLogprob `json:"content"`
}

// TokenLogprob is one generated token's log-prob and its alternatives.
type TokenLogprob struct {
	Token       string       `json:"token"`
	Logprob     float64      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []TopLogprob `json:"top_logprobs"`
}

// TopLogprob is one alternative at a position.
type TopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// Usage counts a request's tokens.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// CompletionRequest is a POST /completions body. Prompt is a string or a
// list of token ids (token-in generation, exact for a trainer).
type CompletionRequest struct {
	Model       string   `json:"model"`
	Prompt      any      `json:"prompt"`
	MaxTokens   *int     `json:"max_tokens,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	N           int      `json:"n,omitempty"`
	Stop        []string `json:"stop,omitempty"`
	Seed        *Seed    `json:"seed,omitempty"`
	// Logprobs is the legacy API's count of alternatives per token (0
	// returns just the sampled token's log-prob).
	Logprobs *int `json:"logprobs,omitempty"`
	Echo     bool `json:"echo,omitempty"`
	Stream   bool `json:"stream,omitempty"`

	TopK           *int     `json:"top_k,omitempty"`
	MinP           *float64 `json:"min_p,omitempty"`
	ReturnTokenIDs bool     `json:"return_token_ids,omitempty"`
	// StopTokenIDs end a completion on these ids besides the server's own
	// end-of-sequence ids (vLLM's and grpo serve's extra).
	StopTokenIDs []int32 `json:"stop_token_ids,omitempty"`
}

// CompletionResponse is a text completion.
type CompletionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []CompletionChoice `json:"choices"`
	Usage   *Usage             `json:"usage,omitempty"`
}

// CompletionChoice is one of a completion's choices; the token ids are
// vLLM's return_token_ids extras.
type CompletionChoice struct {
	Index          int                 `json:"index"`
	Text           string              `json:"text"`
	FinishReason   string              `json:"finish_reason"`
	Logprobs       *CompletionLogprobs `json:"logprobs"`
	PromptTokenIDs []int32             `json:"prompt_token_ids,omitempty"`
	TokenIDs       []int32             `json:"token_ids,omitempty"`
}

// CompletionLogprobs are the legacy API's parallel arrays; with echo the
// first prompt token has no log-prob (null).
type CompletionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*float64           `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// ErrorBody is the OpenAI error object servers answer failures with.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the inside of an ErrorBody.
type ErrorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    any     `json:"code"`
}
