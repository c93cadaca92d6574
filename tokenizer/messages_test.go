package tokenizer

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/chat"
)

// modelDir writes a model directory with the Qwen3 tokenizer.json and the
// given tokenizer_config.json.
func modelDir(t *testing.T, config string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "tokenizer.json", readGz(t, filepath.Join(testdata, "qwen3/tokenizer.json.gz")))
	writeFile(t, dir, "tokenizer_config.json", []byte(config))
	return dir
}

func oneLine(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error spans several lines: %q", err)
	}
}

// TestUnknownFilterMessage: an unknown filter printed gonja's token struct
// (&{<Token[Name] Val='x' Pos=14 …> x [] map[]}); it now names the file,
// the filter and its place, at compile time as Jinja does.
func TestUnknownFilterMessage(t *testing.T) {
	tmpl := "{% for m in messages %}\n{{ m.content | no_such_filter }}{% endfor %}"
	cfg, _ := json.Marshal(map[string]any{"chat_template": tmpl})
	dir := modelDir(t, string(cfg))
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tok.ApplyChatTemplate([]chat.Message{{Role: "user", Content: "hi"}}, ChatOptions{})
	oneLine(t, err, filepath.Join(dir, "tokenizer_config.json"), `filter "no_such_filter"`, "line 2, column 16")
	if strings.Contains(err.Error(), "Token[") || strings.Contains(err.Error(), "&{") {
		t.Errorf("error dumps a token: %q", err)
	}
	_, err = RenderChatTemplate("{{ 1 is no_such_test }}", nil, ChatOptions{}, nil)
	oneLine(t, err, `test "no_such_test"`)
}

// TestChatTemplateListMessages: a chat_template list entry without
// "template" read as "has no chat_template"; a list without "default"
// said the same.
func TestChatTemplateListMessages(t *testing.T) {
	_, err := Load(modelDir(t, `{"chat_template": [{"name": "default"}]}`))
	oneLine(t, err, "tokenizer_config.json", `chat_template[0] ("default") has no "template"`)
	_, err = Load(modelDir(t, `{"chat_template": [{"template": "x"}]}`))
	oneLine(t, err, "tokenizer_config.json", `chat_template[0] has no "name"`)

	tok, err := Load(modelDir(t, `{"chat_template": [{"name": "tool_use", "template": "x"}, {"name": "rag", "template": "y"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = tok.ApplyChatTemplate(nil, ChatOptions{})
	oneLine(t, err, "tokenizer_config.json", `no "default" entry`, `"rag", "tool_use"`)

	tok, err = Load(modelDir(t, `{"chat_template": [{"name": "default", "template": "[{{ messages[0].content }}]"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tok.ApplyChatTemplate([]chat.Message{{Role: "user", Content: "hi"}}, ChatOptions{}); err != nil || got != "[hi]" {
		t.Fatalf("default entry: got %q, %v", got, err)
	}
}

// TestTopLevelNotObject: a tokenizer_config.json or tokenizer.json that is
// a JSON array named Go types (map[string]json.RawMessage, fileJSON).
func TestTopLevelNotObject(t *testing.T) {
	_, err := Load(modelDir(t, `[{"eos_token": "<|im_end|>"}]`))
	oneLine(t, err, "tokenizer_config.json: must be one JSON object", "got a JSON array")
	if strings.Contains(err.Error(), "map[") {
		t.Errorf("error names a Go type: %q", err)
	}
	_, err = FromJSON([]byte(`[1]`), nil)
	oneLine(t, err, "tokenizer.json: must be one JSON object", "got a JSON array")
}
