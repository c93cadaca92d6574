package rollout

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	"github.com/grpo-dev/grpo/chat"
)

// AgentCall is one model call an agent program made through the
// interception endpoint, as the model saw it: the prompt's token ids
// (the whole sequence the turn was generated after) and the completion's
// ids and log-probs.
type AgentCall struct {
	Prompt     []int32
	Completion []int32
	Logprobs   []float32
}

// TokenSample is one training sample's tokens, laid out as a
// Trajectory's: the prompt, then everything after it with the model's
// tokens marked and their log-probs (0 elsewhere).
type TokenSample struct {
	PromptTokens, Tokens []int32
	ModelMask            []bool
	Logprobs             []float32
}

// agentSamples turns an episode's calls into training samples, as
// verifiers (v0's trajectory steps, v1's message graph) and prime-rl do:
// a call whose prompt extends the tokens of an earlier call — that
// call's prompt and completion, followed by the new messages — joins
// that call's sample (the new messages as context, the completion
// trained); a call whose prompt extends none (the program, or the chat
// template, rewrote the history) starts a new sample, in which the
// earlier turns are context only. When several samples' tokens are a
// prefix of the prompt, the longest wins (a program that goes back to an
// earlier state and forks). The samples come back in the order they
// started.
func agentSamples(calls []AgentCall) []TokenSample {
	var out []TokenSample
	var heads [][]int32 // per sample: its latest call's prompt and completion
	for _, c := range calls {
		best := -1
		for i, h := range heads {
			if len(h) <= len(c.Prompt) && slices.Equal(h, c.Prompt[:len(h)]) && (best < 0 || len(h) > len(heads[best])) {
				best = i
			}
		}
		if best < 0 {
			out = append(out, TokenSample{PromptTokens: slices.Clone(c.Prompt)})
			heads = append(heads, nil)
			best = len(out) - 1
			heads[best] = c.Prompt
		}
		s := &out[best]
		for _, id := range c.Prompt[len(heads[best]):] {
			s.Tokens = append(s.Tokens, id)
			s.ModelMask = append(s.ModelMask, false)
			s.Logprobs = append(s.Logprobs, 0)
		}
		s.Tokens = append(s.Tokens, c.Completion...)
		for i := range c.Completion {
			s.ModelMask = append(s.ModelMask, true)
			s.Logprobs = append(s.Logprobs, c.Logprobs[i])
		}
		heads[best] = append(slices.Clip(c.Prompt), c.Completion...)
	}
	return out
}

// agentSampleOf is the index of the sample that ends with call c.
func agentSampleOf(samples []TokenSample, c AgentCall) int {
	for i := len(samples) - 1; i >= 0; i-- {
		s := samples[i]
		n := len(s.PromptTokens) + len(s.Tokens)
		if n == len(c.Prompt)+len(c.Completion) && slices.Equal(s.Tokens[len(s.Tokens)-len(c.Completion):], c.Completion) {
			return i
		}
	}
	return len(samples) - 1
}

// conversationExtends returns the messages req adds after conv — the
// conversation the episode has played so far, ending with the model's
// latest turn — when req restates conv and adds messages that are not
// the model's (the reply, appended as tokens to the same sample); false
// when req rewrites conv (a new sample starts from req). A program that
// restates the model's turn with reasoning split out, or with its
// whitespace trimmed, still restates it.
func conversationExtends(conv, req []chat.Message) ([]chat.Message, bool) {
	if len(req) <= len(conv) {
		return nil, false
	}
	for i, m := range conv {
		if !sameMessage(m, req[i]) {
			return nil, false
		}
	}
	tail := req[len(conv):]
	for _, m := range tail {
		if m.Role == "assistant" {
			return nil, false // a turn the model did not generate
		}
	}
	return tail, true
}

func sameMessage(a, b chat.Message) bool {
	if a.Role != b.Role || a.Name != b.Name || a.ToolCallID != b.ToolCallID {
		return false
	}
	if a.Role != "assistant" {
		return a.Content == b.Content
	}
	return assistantText(a) == assistantText(b) && sameToolCalls(a.ToolCalls, b.ToolCalls)
}

// sameToolCalls compares calls by name and arguments as JSON values, so
// that arguments sent back as a JSON string (OpenAI's form) or as an
// object, or spaced otherwise, are the same.
func sameToolCalls(a, b []chat.ToolCall) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Function.Name != b[i].Function.Name || !reflect.DeepEqual(jsonArgs(a[i].Function.Arguments), jsonArgs(b[i].Function.Arguments)) {
			return false
		}
	}
	return true
}

// jsonArgs is a call's arguments as a JSON value: a JSON string holding
// JSON is read through.
func jsonArgs(raw json.RawMessage) any {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	if s, ok := v.(string); ok {
		var inner any
		if json.Unmarshal([]byte(s), &inner) == nil {
			return inner
		}
	}
	return v
}

// sameTools reports whether two calls offer the same tools (as JSON
// values: spacing and key order do not count).
func sameTools(a, b []json.RawMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !reflect.DeepEqual(jsonArgs(a[i]), jsonArgs(b[i])) {
			return false
		}
	}
	return true
}

// assistantText is an assistant turn's text with its reasoning, however
// the program sent it back: inline in <think>…</think> or as
// reasoning_content.
func assistantText(m chat.Message) string {
	text := m.Content
	if m.ReasoningContent != nil {
		if _, after, ok := strings.Cut(text, "</think>"); ok {
			text = after // the reasoning is both inline and split out
		}
		text = strings.TrimSpace(*m.ReasoningContent) + "\n" + strings.TrimSpace(text)
	} else if think, after, ok := strings.Cut(text, "</think>"); ok {
		text = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(think), "<think>")) + "\n" + strings.TrimSpace(after)
	}
	return strings.TrimSpace(text)
}
