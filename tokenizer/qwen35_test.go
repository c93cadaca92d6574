package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/chat"
)

var qwen35Tiny = filepath.Join(testdata, "qwen35", "tiny")

// TestQwen35TinyEncode: with Qwen3.5's pre-tokenizer a letter and its
// combining mark are one piece, so the fixture's merges join them; with
// Qwen3's pattern in the same file they are two pieces and cannot merge.
// NFC runs first, so a mark that composes (e + U+0301) never reaches the
// split as a mark.
func TestQwen35TinyEncode(t *testing.T) {
	tok, err := Load(qwen35Tiny)
	if err != nil {
		t.Fatal(err)
	}
	id := func(s string) int32 {
		t.Helper()
		v, ok := tok.TokenID(s)
		if !ok {
			t.Fatalf("no token %q", s)
		}
		return v
	}
	qMark, spQMark := id("q\u0301"), id(" q\u0301")
	text := "q\u0301 q\u0301"
	if got, want := tok.Encode(text), []int32{qMark, spQMark}; !slices.Equal(got, want) {
		t.Errorf("Qwen3.5 pattern: Encode(%q) = %v, want %v", text, got, want)
	}
	if got := tok.Decode(tok.Encode(text)); got != text {
		t.Errorf("Decode(Encode(%q)) = %q", text, got)
	}
	if a, b := tok.Encode("e\u0301"), tok.Encode("é"); !slices.Equal(a, b) {
		t.Errorf("NFC: %v vs %v", a, b)
	}
	if got := tok.Encode("<|im_start|>q\u0301<|im_end|>"); !slices.Equal(got, []int32{id("<|im_start|>"), qMark, id("<|im_end|>")}) {
		t.Errorf("special tokens around a word: %v", got)
	}

	// The same file with Qwen3's split pattern.
	data, err := os.ReadFile(filepath.Join(qwen35Tiny, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	qwen3File := strings.Replace(string(data), mustJSONString(qwen35Pattern), mustJSONString(qwenPattern), 1)
	if qwen3File == string(data) {
		t.Fatal("the fixture does not carry Qwen3.5's pattern")
	}
	old, err := FromJSON([]byte(qwen3File), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := old.Encode(text); len(got) != 4 {
		t.Errorf("Qwen3 pattern: Encode(%q) = %v, want 4 ids (q, mark, space+q, mark)", text, got)
	}
}

func mustJSONString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return strings.Trim(string(b), `"`)
}

// TestQwen35ChatTemplateFile: Load takes the template from
// chat_template.jinja (Qwen3.5's tokenizer_config.json has none), renders
// it with the thinking default of the file, and tells the XML call format.
func TestQwen35ChatTemplateFile(t *testing.T) {
	tok, err := Load(qwen35Tiny)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(testdata, "qwen35", "chat_template.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	if tok.ChatTemplate() != string(want) {
		t.Fatal("the template is not chat_template.jinja's")
	}
	if f := tok.ToolCallFormat(); f != ToolCallsQwenXML {
		t.Errorf("format %v, want qwen3_coder", f)
	}
	got, err := tok.ApplyChatTemplate([]chat.Message{{Role: "user", Content: "hi"}}, ChatOptions{AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}

	// The file replaces a template in tokenizer_config.json, list or not.
	dir := t.TempDir()
	for _, name := range []string{"tokenizer.json", "chat_template.jinja"} {
		data, err := os.ReadFile(filepath.Join(qwen35Tiny, name))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, name, data)
	}
	writeFile(t, dir, "tokenizer_config.json", []byte(`{"eos_token": "<|im_end|>", "chat_template": [{"name": "tool_use", "template": "x"}]}`))
	if tok, err = Load(dir); err != nil || tok.ChatTemplate() != string(want) {
		t.Fatalf("config with a template list: %v", err)
	}
	writeFile(t, dir, "chat_template.jinja", []byte(" \n"))
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "chat_template.jinja: empty") {
		t.Fatalf("empty chat_template.jinja: got %v", err)
	}
	writeFile(t, dir, "chat_template.jinja", []byte{0xff, 0xfe})
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "not UTF-8") {
		t.Fatalf("binary chat_template.jinja: got %v", err)
	}
}
