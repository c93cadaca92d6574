package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLoadDirAndAccessors(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(testdata, "qwen3")
	writeFile(t, dir, "tokenizer.json", readGz(t, filepath.Join(src, "tokenizer.json.gz")))
	writeFile(t, dir, "tokenizer_config.json", readGz(t, filepath.Join(src, "tokenizer_config.json.gz")))
	writeFile(t, dir, "generation_config.json", readGz(t, filepath.Join(src, "generation_config.json")))
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Values from Qwen3's files: eos <|im_end|> = 151645, then
	// generation_config's <|endoftext|> = 151643; pad <|endoftext|>; no bos.
	if got := tok.EOS(); !slices.Equal(got, []int32{151645, 151643}) {
		t.Errorf("EOS() = %v", got)
	}
	if id, ok := tok.PadID(); !ok || id != 151643 {
		t.Errorf("PadID() = %d, %v", id, ok)
	}
	if _, ok := tok.BOS(); ok || tok.AddBOS() {
		t.Errorf("Qwen3 has no BOS")
	}
	if tok.VocabSize() != 151669 {
		t.Errorf("VocabSize() = %d, want 151669", tok.VocabSize())
	}
	if id, ok := tok.TokenID("<think>"); !ok || id != 151667 || tok.IsSpecial(id) {
		t.Errorf("<think>: id %d ok %v special %v; want 151667, non-special", id, ok, tok.IsSpecial(id))
	}
	if id, ok := tok.TokenID(" the"); !ok || id != 279 {
		t.Errorf("TokenID(\" the\") = %d, %v; want 279", id, ok)
	}
	if !tok.IsSpecial(151645) {
		t.Error("<|im_end|> should be special")
	}
	if tok.Decode([]int32{9707, -1, 1 << 30, 11}) != "Hello," {
		t.Error("Decode should skip ids outside the vocabulary")
	}

	llama := variants(t)["llama3"]
	if !llama.AddBOS() {
		t.Error("llama3 variant: AddBOS() should be true (TemplateProcessing prepends <|begin_of_text|>)")
	}
	if got := llama.EncodeWithSpecialTokens("hi"); got[0] != 151643 || !slices.Equal(got[1:], llama.Encode("hi")) {
		t.Errorf("llama3 EncodeWithSpecialTokens = %v", got)
	}
}

// Every bad input gives one line that names the file and the key.
func TestLoadErrors(t *testing.T) {
	good := tinyTokenizerJSON()
	if _, err := FromJSON(good, nil); err != nil {
		t.Fatalf("the unedited fixture must load: %v", err)
	}
	var top, model map[string]json.RawMessage
	if err := json.Unmarshal(good, &top); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(top["model"], &model); err != nil {
		t.Fatal(err)
	}
	set := func(inModel bool, key, value string) string {
		return string(editJSON(top, model, func(tp, md map[string]json.RawMessage) {
			if inModel {
				md[key] = json.RawMessage(value)
			} else {
				tp[key] = json.RawMessage(value)
			}
		}))
	}
	splitQwen := `{"type":"Split","pattern":{"Regex":"((?i:'s)"},"behavior":"Isolated","invert":false}`
	byteLevel := `{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}`
	dir := t.TempDir()
	for _, tc := range []struct {
		name, json string
		want       []string
	}{
		{"truncated", string(good[:1000]), []string{"tokenizer.json", "malformed JSON"}},
		{"syntax", "{\n  \"model\": {,}\n}", []string{"tokenizer.json", "line 2"}},
		{"not a tokenizer", `{"hello": 1}`, []string{"tokenizer.json", `"model"`}},
		{"unknown model type", set(true, "type", `"Unigram"`), []string{"model.type", "Unigram", "BPE"}},
		{"unknown normalizer", set(false, "normalizer", `{"type":"Lowercase"}`), []string{"normalizer.type", "Lowercase"}},
		{"unknown pre-tokenizer", set(false, "pre_tokenizer", `{"type":"Metaspace"}`), []string{"pre_tokenizer", "Metaspace"}},
		{"no ByteLevel", set(false, "pre_tokenizer", `{"type":"Sequence","pretokenizers":[]}`), []string{"pre_tokenizer", "ByteLevel"}},
		{"bad regex", set(false, "pre_tokenizer", `{"type":"Sequence","pretokenizers":[`+splitQwen+`,`+byteLevel+`]}`), []string{"split pattern"}},
		{"unknown decoder", set(false, "decoder", `{"type":"WordPiece"}`), []string{"decoder.type", "WordPiece"}},
		{"unknown post-processor", set(false, "post_processor", `{"type":"BertProcessing"}`), []string{"post_processor.type", "BertProcessing"}},
		{"merge out of vocab", set(true, "merges", `[["Ġ","zzzq"]]`), []string{"model.merges[0]", "zzzq"}},
		{"merge string without space", set(true, "merges", `["ab"]`), []string{"model.merges[0]", `"ab"`}},
		{"missing byte", set(true, "vocab", `{"a":0}`), []string{"model.vocab", "byte"}},
		{"dropout", set(true, "dropout", `0.1`), []string{"model.dropout", "0.1"}},
		{"wrong type", set(true, "vocab", `7`), []string{"tokenizer.json", "vocab"}},
		{"bad added token", set(false, "added_tokens", `[{"content":"<x>"}]`), []string{"added_tokens[0]", "id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, "tokenizer.json", []byte(tc.json))
			_, err := LoadFiles(p, "")
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not mention %q", msg, w)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans several lines: %q", msg)
			}
		})
	}
}

func TestLoadMissingFiles(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "tokenizer_config.json: missing") {
		t.Errorf("empty dir: %v", err)
	}
	writeFile(t, dir, "tokenizer_config.json", []byte(`{}`))
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "tokenizer.json: file not found") {
		t.Errorf("no tokenizer.json: %v", err)
	}
	if _, err := LoadFiles(writeFile(t, dir, "x.json.gz", []byte("not gzip")), ""); err == nil || !strings.Contains(err.Error(), "not a gzip file") {
		t.Errorf("bad gzip: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	tokJSON := tinyTokenizerJSON()
	for _, tc := range []struct{ cfg, want string }{
		{`{"eos_token": "<|nope|>"}`, `eos_token "<|nope|>" is not a token`},
		{`{"eos_token": 5}`, `"eos_token" must be a token string`},
		{`{"chat_template": 5}`, `"chat_template" must be a string`},
		{`{"eos_token": `, `malformed JSON`},
	} {
		_, err := FromJSON(tokJSON, []byte(tc.cfg))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "tokenizer_config.json") {
			t.Errorf("%s: got %v, want %q", tc.cfg, err, tc.want)
		}
	}
	dir := t.TempDir()
	writeFile(t, dir, "tokenizer.json", tokJSON)
	writeFile(t, dir, "tokenizer_config.json", []byte(`{}`))
	writeFile(t, dir, "generation_config.json", []byte(`{"eos_token_id": [1, 999999]}`))
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "eos_token_id 999999") {
		t.Errorf("bad generation_config: %v", err)
	}
	os.Remove(filepath.Join(dir, "generation_config.json"))
	if tok, err := Load(dir); err != nil || len(tok.EOS()) != 0 {
		t.Errorf("no generation_config: %v", err)
	}
}

// tinyTokenizerJSON is a minimal valid byte-level BPE tokenizer.json: the
// 256 byte tokens plus two merges.
func tinyTokenizerJSON() []byte {
	vocab := map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[string(byteToRune[b])] = b
	}
	vocab["he"], vocab["hel"] = 256, 257
	return mustRaw(map[string]any{
		"added_tokens": []any{map[string]any{"id": 258, "content": "<|end|>", "special": true}},
		"normalizer":   map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": qwenPattern}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
		}},
		"post_processor": map[string]any{"type": "ByteLevel"},
		"decoder":        map[string]any{"type": "ByteLevel"},
		"model":          map[string]any{"type": "BPE", "vocab": vocab, "merges": [][2]string{{"h", "e"}, {"he", "l"}}, "dropout": nil},
	})
}

func TestTinyTokenizer(t *testing.T) {
	tok, err := FromJSON(tinyTokenizerJSON(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// "hello" → hel + l + o; "<|end|>" is the added token 258.
	if got := tok.Encode("hello<|end|>"); !slices.Equal(got, []int32{257, 'l', 'o', 258}) {
		t.Errorf("Encode = %v", got)
	}
}
