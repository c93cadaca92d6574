package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/tokenizer"
)

func init() {
	var modelArg string
	var asChat, jsonl, noThinking bool
	register(&command{
		name:    "tokenize",
		summary: "print the token ids of a text, as the model's HF tokenizer gives them",
		usage:   "--model DIR_OR_ID [--chat] [--no-thinking] (TEXT | --jsonl)",
		help: `Prints {"ids":[...]}: the ids Hugging Face tokenizers gives for TEXT with
add_special_tokens=True (Llama 3 starts with <|begin_of_text|>; Qwen adds
nothing). Special tokens written in the text, such as <|im_end|>, become
their single ids.

--chat renders TEXT as one user message with the model's chat template and
add_generation_prompt, then encodes that prompt as apply_chat_template
does. --no-thinking sets Qwen3's enable_thinking=false.

--jsonl reads stdin instead: one JSON value per line, a string (a text, or
with --chat a user message) or, with --chat, a list of messages
({"role": ..., "content": ...}); it prints one id array per line.

Examples:
  grpo tokenize --model Qwen/Qwen3-0.6B "Hello, world"
  grpo tokenize --model ./qwen3 --chat --no-thinking "What is 2+2?"
  printf '"a"\n"b c"\n' | grpo tokenize --model ./qwen3 --jsonl`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&modelArg, "model", "", "model directory or hub id (required)")
			fs.BoolVar(&asChat, "chat", false, "render the text as a user message with the chat template")
			fs.BoolVar(&jsonl, "jsonl", false, "read one JSON string (or, with --chat, message list) per stdin line")
			fs.BoolVar(&noThinking, "no-thinking", false, "with --chat: enable_thinking=false (Qwen3)")
		},
		run: func(args []string) error {
			switch {
			case jsonl && len(args) > 0:
				return usagef("--jsonl reads stdin; drop the argument %q", args[0])
			case !jsonl && len(args) != 1:
				return usagef("give one TEXT argument (quote it), or --jsonl to read stdin")
			case noThinking && !asChat:
				return usagef("--no-thinking only applies with --chat")
			}
			dir, err := resolveModelDir(modelArg)
			if err != nil {
				return err
			}
			tok, err := tokenizer.Load(dir)
			if err != nil {
				return err
			}
			enc := &tokenizeRun{tok: tok, chat: asChat}
			if noThinking {
				f := false
				enc.thinking = &f
			}
			out := bufio.NewWriter(stdout)
			defer out.Flush()
			if !jsonl {
				ids, err := enc.encode(chat.Message{Role: "user", Content: args[0]}, nil)
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "{\"ids\":%s}\n", idList(ids))
				return nil
			}
			return enc.jsonl(os.Stdin, out)
		},
	})
}

type tokenizeRun struct {
	tok      *tokenizer.Tokenizer
	chat     bool
	thinking *bool
}

// encode tokenizes one input: a text (msgs nil) or a conversation.
func (r *tokenizeRun) encode(single chat.Message, msgs []chat.Message) ([]int32, error) {
	if !r.chat {
		return r.tok.EncodeWithSpecialTokens(single.Content), nil
	}
	if msgs == nil {
		msgs = []chat.Message{single}
	}
	prompt, err := r.tok.ApplyChatTemplate(msgs, tokenizer.ChatOptions{AddGenerationPrompt: true, EnableThinking: r.thinking})
	if err != nil {
		return nil, err
	}
	return r.tok.Encode(prompt), nil
}

func (r *tokenizeRun) jsonl(in io.Reader, out *bufio.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 64<<20)
	for line := 1; sc.Scan(); line++ {
		raw := sc.Bytes()
		var text string
		var msgs []chat.Message
		if err := json.Unmarshal(raw, &text); err != nil {
			if !r.chat {
				return fmt.Errorf("stdin line %d: want a JSON string, got %.60q", line, raw)
			}
			if err := json.Unmarshal(raw, &msgs); err != nil || len(msgs) == 0 {
				return fmt.Errorf("stdin line %d: want a JSON string or a non-empty list of {\"role\", \"content\"} messages, got %.60q", line, raw)
			}
		}
		ids, err := r.encode(chat.Message{Role: "user", Content: text}, msgs)
		if err != nil {
			return fmt.Errorf("stdin line %d: %v", line, err)
		}
		out.WriteString(idList(ids))
		out.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading stdin: %v", err)
	}
	return nil
}

func idList(ids []int32) string {
	b := make([]byte, 0, 8*len(ids)+2)
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	return string(append(b, ']'))
}
