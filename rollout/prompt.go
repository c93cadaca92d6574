package rollout

import (
	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/tokenizer"
)

// prompt is one example's prompt as the tokens an episode starts with, or
// why the chat template could not render it.
type prompt struct {
	ids []int32
	err error
}

// renderPrompts renders each example's prompt once; the result both sizes
// the KV cache (Local) and starts every rollout of the example.
func renderPrompts(tok *tokenizer.Tokenizer, exs []env.Example, opts tokenizer.ChatOptions) []prompt {
	out := make([]prompt, len(exs))
	for i, ex := range exs {
		out[i].ids, out[i].err = renderPrompt(tok, ex.Prompt, opts)
	}
	return out
}

func renderPrompt(tok *tokenizer.Tokenizer, msgs []chat.Message, opts tokenizer.ChatOptions) ([]int32, error) {
	opts.AddGenerationPrompt = true
	text, err := tok.ApplyChatTemplate(msgs, opts)
	if err != nil {
		return nil, err
	}
	return tok.Encode(text), nil
}

// RenderEnvPrompt returns the tokens an episode of e starts with: the
// prompt through tok's chat template with the generation prompt and, for
// a tool environment, its tools' schemas (which Local and Play render).
func RenderEnvPrompt(tok *tokenizer.Tokenizer, e env.Environment, prompt []chat.Message, enableThinking *bool) ([]int32, error) {
	opts := tokenizer.ChatOptions{EnableThinking: enableThinking}
	for _, t := range env.ToolsOf(e) {
		opts.Tools = append(opts.Tools, t.Schema())
	}
	return renderPrompt(tok, prompt, opts)
}

// RenderPrompt returns the tokens an episode starts with: the prompt
// messages through tok's chat template with the generation prompt.
func RenderPrompt(tok *tokenizer.Tokenizer, prompt []chat.Message, enableThinking *bool) ([]int32, error) {
	return renderPrompt(tok, prompt, tokenizer.ChatOptions{EnableThinking: enableThinking})
}
