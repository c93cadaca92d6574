// Package tinymodel writes tiny, complete model directories for tests: the
// weights of a testdata model plus a 259-token byte-level tokenizer with a
// ChatML chat template, so tests can run tokenizer, sampler, environments
// and trainer end to end in milliseconds.
package tinymodel

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/grpo-dev/grpo/model/safetensors"
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

// WriteQwen3 makes dir a complete model directory with Qwen3's real
// tokenizer (testdata/tokenizer/qwen3, gunzipped from qwen3Dir) and a tiny
// random Qwen3 over its whole vocabulary (hidden 16, one layer, context
// maxPositions), so tests run Qwen3's chat template — tools, <tool_call>,
// <think> — end to end. The weights are a fixed-seed stream: the same
// files every time.
func WriteQwen3(dir, qwen3Dir string, maxPositions int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		if err := gunzipFile(filepath.Join(qwen3Dir, name+".gz"), filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	var tok struct {
		Model struct {
			Vocab map[string]int `json:"vocab"`
		} `json:"model"`
		Added []struct {
			ID int `json:"id"`
		} `json:"added_tokens"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &tok); err != nil {
		return err
	}
	vocab := len(tok.Model.Vocab)
	for _, a := range tok.Added {
		vocab = max(vocab, a.ID+1)
	}
	const hidden, inter, heads, kv, hd = 16, 32, 2, 1, 8
	cfg := map[string]any{
		"architectures": []string{"Qwen3ForCausalLM"}, "attention_bias": false, "bos_token_id": nil, "eos_token_id": 151645,
		"head_dim": hd, "hidden_act": "silu", "hidden_size": hidden, "intermediate_size": inter,
		"max_position_embeddings": maxPositions, "model_type": "qwen3", "num_attention_heads": heads,
		"num_hidden_layers": 1, "num_key_value_heads": kv, "rms_norm_eps": 1e-6, "rope_theta": 1000000,
		"tie_word_embeddings": true, "torch_dtype": "float32", "vocab_size": vocab,
	}
	cj, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cj, 0o644); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(15, 3))
	var tensors []safetensors.Tensor
	add := func(name string, ones bool, shape ...int) error {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			if ones {
				v[i] = 1
			} else {
				v[i] = float32(rng.NormFloat64() * 0.1)
			}
		}
		t, err := safetensors.NewF32(name, shape, v)
		tensors = append(tensors, t)
		return err
	}
	p := "model.layers.0."
	for _, w := range []struct {
		name  string
		ones  bool
		shape []int
	}{
		{"model.embed_tokens.weight", false, []int{vocab, hidden}}, {"model.norm.weight", true, []int{hidden}},
		{p + "input_layernorm.weight", true, []int{hidden}}, {p + "post_attention_layernorm.weight", true, []int{hidden}},
		{p + "self_attn.q_proj.weight", false, []int{heads * hd, hidden}}, {p + "self_attn.k_proj.weight", false, []int{kv * hd, hidden}},
		{p + "self_attn.v_proj.weight", false, []int{kv * hd, hidden}}, {p + "self_attn.o_proj.weight", false, []int{hidden, heads * hd}},
		{p + "self_attn.q_norm.weight", true, []int{hd}}, {p + "self_attn.k_norm.weight", true, []int{hd}},
		{p + "mlp.gate_proj.weight", false, []int{inter, hidden}}, {p + "mlp.up_proj.weight", false, []int{inter, hidden}},
		{p + "mlp.down_proj.weight", false, []int{hidden, inter}},
	} {
		if err := add(w.name, w.ones, w.shape...); err != nil {
			return err
		}
	}
	return safetensors.Write(filepath.Join(dir, "model.safetensors"), tensors, map[string]string{"format": "pt"})
}

func gunzipFile(src, dst string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}
