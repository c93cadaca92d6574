// Package tinymodel writes tiny, complete model directories for tests: the
// weights of a testdata model plus a 259-token byte-level tokenizer with a
// ChatML chat template, so tests can run tokenizer, sampler, environments
// and trainer end to end in milliseconds.
package tinymodel

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// Token ids of the byte tokenizer: bytes are 0–255.
const (
	EndOfText = 256
	IMStart   = 257
	IMEnd     = 258
	VocabSize = 259
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
	runes := make([]rune, 256)
	for _, b := range bs {
		in[b], runes[b] = true, rune(b)
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

// WriteByteTokenizer writes tokenizer.json and tokenizer_config.json of the
// byte tokenizer into dir: Qwen's normalizer and split pre-tokenizer over a
// byte-level vocabulary with no merges, so the code paths of real Qwen
// tokenizers run on 259 tokens.
func WriteByteTokenizer(dir string) error {
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
		"added_tokens": []any{special(EndOfText, "<|endoftext|>"), special(IMStart, "<|im_start|>"), special(IMEnd, "<|im_end|>")},
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

// Write makes dir a complete model directory: the files of the testdata
// model src (e.g. "../testdata/models/qwen3-tiny", vocab ≥ 259) plus the
// byte tokenizer.
func Write(dir, src string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
			return err
		}
	}
	return WriteByteTokenizer(dir)
}

// WriteReverseEnv writes a custom environment (environment.toml + data) in
// dir: reverse a short word, reward = difflib ratio. n words per split.
func WriteReverseEnv(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	words := []string{"cat", "dog", "bird", "fish", "lamp", "tree", "rock", "moon", "star", "sun", "leaf", "wind"}
	for _, split := range []string{"train", "eval"} {
		var b []byte
		for i := range n {
			w := words[i%len(words)]
			if split == "eval" {
				w = words[(i+5)%len(words)]
			}
			r := []byte(w)
			for a, z := 0, len(r)-1; a < z; a, z = a+1, z-1 {
				r[a], r[z] = r[z], r[a]
			}
			line, _ := json.Marshal(map[string]string{"question": w, "answer": string(r)})
			b = append(append(b, line...), '\n')
		}
		if err := os.WriteFile(filepath.Join(dir, split+".jsonl"), b, 0o644); err != nil {
			return err
		}
	}
	toml := "id = \"test-reverse\"\nprompt_template = \"reverse {question}\"\nparser = \"none\"\n\n[dataset]\ntrain = \"train.jsonl\"\neval = \"eval.jsonl\"\n\n[[rubric]]\ntype = \"ratio\"\nweight = 1.0\n"
	return os.WriteFile(filepath.Join(dir, "environment.toml"), []byte(toml), 0o644)
}
