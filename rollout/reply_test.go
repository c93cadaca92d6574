package rollout

import (
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/tokenizer"
)

var (
	qwen3Once sync.Once
	qwen3Tok  *tokenizer.Tokenizer
	qwen3Err  error
)

// qwen3Tokenizer loads the committed Qwen3 tokenizer once per test binary.
func qwen3Tokenizer(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	qwen3Once.Do(func() {
		dir := "../testdata/tokenizer/qwen3"
		qwen3Tok, qwen3Err = tokenizer.LoadFiles(filepath.Join(dir, "tokenizer.json.gz"), filepath.Join(dir, "tokenizer_config.json.gz"))
	})
	if qwen3Err != nil {
		t.Fatal(qwen3Err)
	}
	return qwen3Tok
}

// TestReplyTokensRebuildQwen3Template plays a three-turn conversation the
// way the driver does — prompt tokens, each assistant turn as its content
// tokens plus <|im_end|>, each reply as replyText's tokens — and checks
// that the concatenation is token for token what the template gives for
// the whole conversation (no <think> blocks, so the template strips
// nothing), for user replies, tool replies and a turn cut off without its
// stop token.
func TestReplyTokensRebuildQwen3Template(t *testing.T) {
	tok := qwen3Tokenizer(t)
	imEnd, _ := tok.TokenID("<|im_end|>")
	prompt := []chat.Message{{Role: "system", Content: "Play the game."}, {Role: "user", Content: "Guess a word."}}
	for name, c := range map[string]struct {
		replies  [][]chat.Message
		stopped  []bool // whether each assistant turn ended with <|im_end|>
		thinking *bool
	}{
		"user replies": {replies: [][]chat.Message{{{Role: "user", Content: "Wrong, try again."}}, {{Role: "user", Content: "Closer.\nAgain?"}}}, stopped: []bool{true, true, true}},
		"tool replies": {replies: [][]chat.Message{{{Role: "tool", Content: "42"}, {Role: "tool", Content: "x"}}, {{Role: "user", Content: "ok"}}}, stopped: []bool{true, true, true}},
		"cut turn":     {replies: [][]chat.Message{{{Role: "user", Content: "Go on."}}, {{Role: "user", Content: "And?"}}}, stopped: []bool{false, true, true}},
	} {
		t.Run(name, func(t *testing.T) {
			opts := tokenizer.ChatOptions{EnableThinking: c.thinking}
			answers := []string{"CRANE", "SLATE and more", "The word is PLANT."}
			gen := opts
			gen.AddGenerationPrompt = true
			text, err := tok.ApplyChatTemplate(prompt, gen)
			if err != nil {
				t.Fatal(err)
			}
			ids := tok.Encode(text)
			conv := slices.Clone(prompt)
			for turn, reply := range c.replies {
				ids = append(ids, tok.Encode(answers[turn])...)
				stopText := ""
				if c.stopped[turn] {
					ids = append(ids, imEnd)
					stopText = "<|im_end|>"
				}
				conv = append(conv, chat.Message{Role: "assistant", Content: answers[turn]})
				rt, err := replyText(tok.ApplyChatTemplate, conv, reply, stopText, opts, tok.ToolCallFormat())
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, tok.Encode(rt)...)
				conv = append(conv, reply...)
			}
			full, err := tok.ApplyChatTemplate(conv, gen)
			if err != nil {
				t.Fatal(err)
			}
			if want := tok.Encode(full); !slices.Equal(ids, want) {
				t.Errorf("concatenated turns differ from the template:\ngot  %q\nwant %q", tok.Decode(ids), full)
			}
		})
	}
}

// llama3Template is Meta-Llama-3-8B-Instruct's chat template.
const llama3Template = `{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>

'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>

' }}{% endif %}`

// TestReplyTextLlama3: the same rebuild for Llama 3's format, where the
// turn's closing is <|eot_id|> with no newline after it.
func TestReplyTextLlama3(t *testing.T) {
	render := func(ms []chat.Message, o tokenizer.ChatOptions) (string, error) {
		return tokenizer.RenderChatTemplate(llama3Template, ms, o, map[string]any{"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"})
	}
	conv := []chat.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}}
	text, err := render(conv, tokenizer.ChatOptions{AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	for turn, stop := range []string{"<|eot_id|>", ""} {
		answer := []string{"Hello.", "Cut off mid"}[turn]
		text += answer + stop
		conv = append(conv, chat.Message{Role: "assistant", Content: answer})
		reply := []chat.Message{{Role: "user", Content: "More?"}}
		rt, err := replyText(render, conv, reply, stop, tokenizer.ChatOptions{}, tokenizer.ToolCallsNone)
		if err != nil {
			t.Fatal(err)
		}
		text += rt
		conv = append(conv, reply...)
	}
	want, _ := render(conv, tokenizer.ChatOptions{AddGenerationPrompt: true})
	if text != want {
		t.Errorf("concatenated turns differ from the template:\ngot  %q\nwant %q", text, want)
	}
}

func TestReplyTextErrors(t *testing.T) {
	tok := qwen3Tokenizer(t)
	if _, err := replyText(tok.ApplyChatTemplate, []chat.Message{{Role: "user", Content: "x"}}, nil, "", tokenizer.ChatOptions{}, tokenizer.ToolCallsNone); err == nil {
		t.Error("a conversation not ending with the assistant's turn was accepted")
	}
	twice := func([]chat.Message, tokenizer.ChatOptions) (string, error) {
		return turnMarker + turnMarker, nil
	}
	if _, err := replyText(twice, []chat.Message{{Role: "assistant", Content: "x"}}, nil, "", tokenizer.ChatOptions{}, tokenizer.ToolCallsNone); err == nil {
		t.Error("a template writing the turn twice was accepted")
	}
}

// TestReplyTextQwen35: with Qwen3.5's template the text after a sampled
// turn that ends in a tool call is the tool responses in a user turn and
// the next generation prompt, which reopens <think> (4B and larger) — the
// template's raise for a conversation without a user query is not hit,
// since replyText renders the whole conversation.
func TestReplyTextQwen35(t *testing.T) {
	tok, err := tokenizer.Load("../testdata/tokenizer/qwen35/tiny")
	if err != nil {
		t.Fatal(err)
	}
	conv := []chat.Message{{Role: "user", Content: "Add 2 and 3."}, {Role: "assistant", Content: "sampled"}}
	reply := []chat.Message{{Role: "tool", Content: "5"}, {Role: "tool", Content: "ok"}}
	got, err := replyText(tok.ApplyChatTemplate, conv, reply, "<|im_end|>", tokenizer.ChatOptions{}, tok.ToolCallFormat())
	if err != nil {
		t.Fatal(err)
	}
	want := "\n<|im_start|>user\n<tool_response>\n5\n</tool_response>\n<tool_response>\nok\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n"
	if got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}
