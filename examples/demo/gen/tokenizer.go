package main

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// The demo tokenizer is byte-level BPE with no merges: one token per byte
// (ids 0–255, in GPT-2's bytes-to-unicode order) plus three special tokens,
// with Qwen's pre-tokenizer and a ChatML chat template, so every code path
// of real Qwen tokenizers runs on a 259-token vocabulary.
const (
	tokEndOfText = 256
	tokIMStart   = 257
	tokIMEnd     = 258
	vocabSize    = 259
)

const chatTemplate = "{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"

// bytesToUnicode is GPT-2's reversible map from bytes to printable runes.
func bytesToUnicode() []rune {
	var bs []int
	for b := '!'; b <= '~'; b++ {
		bs = append(bs, int(b))
	}
	for b := 0xA1; b <= 0xAC; b++ {
		bs = append(bs, b)
	}
	for b := 0xAE; b <= 0xFF; b++ {
		bs = append(bs, b)
	}
	in := map[int]bool{}
	for _, b := range bs {
		in[b] = true
	}
	runes := make([]rune, 256)
	for _, b := range bs {
		runes[b] = rune(b)
	}
	n := 0
	for b := range 256 {
		if !in[b] {
			runes[b] = rune(256 + n)
			n++
		}
	}
	return runes
}

func writeTokenizer(dir string) error {
	vocab := map[string]int{}
	for b, r := range bytesToUnicode() {
		vocab[string(r)] = b
	}
	special := func(id int, s string) map[string]any {
		return map[string]any{"id": id, "content": s, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
	}
	byteLevel := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}
	tok := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil,
		"added_tokens": []any{special(tokEndOfText, "<|endoftext|>"), special(tokIMStart, "<|im_start|>"), special(tokIMEnd, "<|im_end|>")},
		"normalizer":   map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`},
				"behavior": "Isolated", "invert": false},
			byteLevel}},
		"post_processor": byteLevel,
		"decoder":        byteLevel,
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "",
			"end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": vocab, "merges": []any{}},
	}
	cfg := map[string]any{
		"add_bos_token": false, "bos_token": nil, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
		"model_max_length": 256, "tokenizer_class": "Qwen2Tokenizer", "chat_template": chatTemplate,
		"clean_up_tokenization_spaces": false, "errors": "replace", "split_special_tokens": false,
	}
	for name, v := range map[string]any{"tokenizer.json": tok, "tokenizer_config.json": cfg} {
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), append(data, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}
