package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/loader"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
)

func init() {
	var modelArg, adapterArg, device, system, prompt string
	var chat, noThinking, jsonOut bool
	var n int
	p := sampler.DefaultParams()
	p.MaxTokens = 256
	register(&command{
		name:    "generate",
		summary: "sample completions of a prompt from a model (optionally with a LoRA adapter)",
		usage:   "--model DIR_OR_ID [--adapter DIR] [--chat] [--system S] [sampling flags] [-n N] [--json] --prompt TEXT",
		help: `Samples N completions of --prompt and prints them, separated by a header
line per completion when N > 1. Generation ends at the model's end-of-turn
tokens (its EOS list plus <|im_end|>, <|endoftext|>, <|eot_id|> when the
vocabulary has them), which are not printed, or after --max-tokens tokens.

Without --chat the prompt is encoded as plain text (with the BOS token where
the tokenizer adds one); with --chat it becomes a user message (after
--system, if given) rendered with the model's chat template and its
generation prompt. --no-thinking sets Qwen3's enable_thinking=false.

Sampling applies temperature, min-p, top-k and top-p in that order (vLLM's);
--temperature 0 is greedy. --seed makes the output reproducible: completion
i uses its own stream derived from the seed and i.

--json prints one JSON object per completion instead:
{"index":i,"text":...,"ids":[...],"logprobs":[...],"finish_reason":"stop"|"length"}
where ids include the stop token and logprobs are the model's log-probs of
the ids (temperature 1, untruncated: what training recomputes).

Examples:
  grpo generate --model Qwen/Qwen3-0.6B --chat --no-thinking --prompt "Reverse: hello"
  grpo generate --model ./qwen3 --adapter runs/r1/adapter --chat --temperature 0.7 -n 4 --prompt "2+2?"
  grpo generate --model testdata/models/qwen3-tiny --temperature 0 --max-tokens 8 --json --prompt "abc"`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&modelArg, "model", "", "model directory or hub id (required)")
			fs.StringVar(&adapterArg, "adapter", "", "PEFT LoRA adapter directory to apply")
			fs.StringVar(&prompt, "prompt", "", "the prompt text (required)")
			fs.BoolVar(&chat, "chat", false, "render the prompt as a user message with the chat template")
			fs.StringVar(&system, "system", "", "with --chat: a system message before the prompt")
			fs.BoolVar(&noThinking, "no-thinking", false, "with --chat: enable_thinking=false (Qwen3)")
			fs.Float64Var(&p.Temperature, "temperature", p.Temperature, "sampling temperature; 0 is greedy")
			fs.Float64Var(&p.TopP, "top-p", p.TopP, "nucleus sampling mass in (0, 1]; 1 disables it")
			fs.IntVar(&p.TopK, "top-k", p.TopK, "keep the K most likely tokens; 0 disables it")
			fs.Float64Var(&p.MinP, "min-p", p.MinP, "drop tokens below min-p times the top probability; 0 disables it")
			fs.IntVar(&p.MaxTokens, "max-tokens", p.MaxTokens, "most tokens to generate per completion")
			fs.Uint64Var(&p.Seed, "seed", 0, "random seed")
			fs.IntVar(&n, "n", 1, "number of completions")
			fs.BoolVar(&jsonOut, "json", false, "print one JSON object per completion (ids, logprobs, finish_reason)")
			deviceFlag(fs, &device)
		},
		run: func(args []string) error {
			switch {
			case len(args) > 0:
				return usagef("unexpected argument %q; pass the text with --prompt", args[0])
			case prompt == "":
				return usagef("--prompt is required")
			case n < 1:
				return usagef("-n %d: want at least 1 completion", n)
			case p.MaxTokens < 1:
				return usagef("--max-tokens %d: want at least 1", p.MaxTokens)
			case (system != "" || noThinking) && !chat:
				return usagef("--system and --no-thinking only apply with --chat")
			}
			if err := p.Validate(); err != nil {
				return usagef("%s", strings.Replace(err.Error(), "_", "-", 1))
			}
			l, err := openModel(loader.Spec{Model: modelArg, Device: device, Adapter: adapterArg})
			if err != nil {
				return err
			}
			tok := l.Tokenizer
			ids, err := generatePrompt(tok, prompt, system, chat, noThinking)
			if err != nil {
				return err
			}
			p.StopTokens = sampler.StopTokenIDs(tok)
			return generate(l.Model, tok, ids, p, n, jsonOut)
		},
	})
}

// generatePrompt encodes the prompt as plain text or as a chat turn.
func generatePrompt(tok *tokenizer.Tokenizer, prompt, system string, asChat, noThinking bool) ([]int32, error) {
	if !asChat {
		return tok.EncodeWithSpecialTokens(prompt), nil
	}
	var msgs []chat.Message
	if system != "" {
		msgs = append(msgs, chat.Message{Role: "system", Content: system})
	}
	msgs = append(msgs, chat.Message{Role: "user", Content: prompt})
	opts := tokenizer.ChatOptions{AddGenerationPrompt: true}
	if noThinking {
		f := false
		opts.EnableThinking = &f
	}
	text, err := tok.ApplyChatTemplate(msgs, opts)
	if err != nil {
		return nil, err
	}
	return tok.Encode(text), nil
}

// generate samples n completions of ids together and prints them.
func generate(m *model.Model, tok *tokenizer.Tokenizer, ids []int32, p sampler.Params, n int, jsonOut bool) error {
	s, err := sampler.New(m, tok, sampler.Config{Slots: n, MaxLen: len(ids) + p.MaxTokens})
	if err != nil {
		return err
	}
	defer s.Close()
	prompts := make([][]int32, n)
	params := make([]sampler.Params, n)
	for i := range n {
		prompts[i] = ids
		params[i] = p
		params[i].Seed = sampler.DeriveSeed(p.Seed, uint64(i))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	turns, err := s.Generate(ctx, prompts, params)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	for i, tr := range turns {
		shown := tr.Tokens
		if tr.StopToken {
			shown = shown[:len(shown)-1]
		}
		text := tok.Decode(shown)
		if jsonOut {
			if err := enc.Encode(map[string]any{"index": i, "text": text, "ids": tr.Tokens, "logprobs": tr.Logprobs, "finish_reason": tr.FinishReason}); err != nil {
				return err
			}
			continue
		}
		if n > 1 {
			fmt.Fprintf(stdout, "--- completion %d (%s) ---\n", i, tr.FinishReason)
		}
		fmt.Fprintln(stdout, text)
	}
	return nil
}
