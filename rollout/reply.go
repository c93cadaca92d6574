package rollout

import (
	"fmt"
	"strings"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/tokenizer"
)

// renderFunc renders a conversation with a chat template;
// (*tokenizer.Tokenizer).ApplyChatTemplate is one.
type renderFunc func(messages []chat.Message, opts tokenizer.ChatOptions) (string, error)

// turnMarker stands in for the model's latest turn when the template
// renders what follows it; nothing a model or dataset writes contains it.
const turnMarker = "\x1dgrpo-turn-marker-6c0f2b\x1d"

// replyText returns the text to append after the model's latest turn so
// that the environment's reply and the next generation prompt follow it
// exactly as the chat template would write them — without re-rendering
// (and so re-tokenising) any earlier turn. Earlier turns must stay the
// exact sampled tokens: Qwen3's template, for one, strips <think> blocks
// from earlier assistant turns, which would change what the log-probs
// were computed on.
//
// It renders the conversation with the latest assistant turn replaced by
// a marker, followed by reply, with the generation prompt, and keeps what
// the template writes after the marker: the turn's closing ("<|im_end|>\n"
// for ChatML, "<|eot_id|>" for Llama 3), the reply's messages and the next
// assistant header. The whole conversation is given to the template, so
// templates that check roles or look back (Qwen3's last-query index) see
// what they expect. stopText is the text of the stop token that ended the
// model's turn ("" when it ended otherwise): when the template's closing
// starts with it, the model already wrote it and it is dropped; otherwise
// the closing is kept, so a turn cut off by max_tokens is still closed.
//
// gpt-oss's template (format ToolCallsHarmony) names a tool result after
// the call before it (<|start|>functions.NAME to=assistant…) and refuses a
// result that follows no call, so there the marker turn keeps a call named
// as the first result is; the template then writes that call again after
// the marker, up to the <|call|> that ends it, and that is cut too (the
// model wrote its call, and <|call|> when it stopped on it; a turn cut off
// before gets the <|call|>, so it is closed).
func replyText(render renderFunc, conv, reply []chat.Message, stopText string, opts tokenizer.ChatOptions, format tokenizer.ToolCallFormat) (string, error) {
	if len(conv) == 0 || conv[len(conv)-1].Role != "assistant" {
		return "", fmt.Errorf("conversation must end with the model's assistant turn")
	}
	msgs := make([]chat.Message, 0, len(conv)+len(reply))
	msgs = append(append(msgs, conv...), reply...)
	// The marker stands for the whole sampled turn: its tool calls and
	// thinking are in the marker's place already, so the template must not
	// write them again after it.
	marker := chat.Message{Role: "assistant", Content: turnMarker}
	namesCall := format == tokenizer.ToolCallsHarmony && len(reply) > 0 && reply[0].Role == "tool"
	if namesCall {
		marker.ToolCalls = []chat.ToolCall{{Type: "function"}}
		marker.ToolCalls[0].Function.Name = reply[0].Name
		marker.ToolCalls[0].Function.Arguments = []byte("{}")
	}
	msgs[len(conv)-1] = marker
	opts.AddGenerationPrompt = true
	text, err := render(msgs, opts)
	if err != nil {
		return "", err
	}
	if n := strings.Count(text, turnMarker); n != 1 {
		return "", fmt.Errorf("chat template wrote the assistant turn %d times instead of once; cannot tell where the environment's reply starts", n)
	}
	_, after, _ := strings.Cut(text, turnMarker)
	if namesCall {
		_, rest, ok := strings.Cut(after, tokenizer.HarmonyCallEnd)
		if !ok {
			return "", fmt.Errorf("chat template wrote no %s after the tool call; cannot tell where the tool's reply starts", tokenizer.HarmonyCallEnd)
		}
		if stopText == tokenizer.HarmonyCallEnd {
			return rest, nil
		}
		return tokenizer.HarmonyCallEnd + rest, nil
	}
	if stopText != "" {
		after = strings.TrimPrefix(after, stopText)
	}
	if format == tokenizer.ToolCallsHarmony && stopText == tokenizer.HarmonyReturn {
		// The template closes an earlier final answer with <|end|>; the
		// model closed this one with <|return|>, which ends it as well.
		after = strings.TrimPrefix(after, tokenizer.HarmonyEnd)
	}
	return after, nil
}
