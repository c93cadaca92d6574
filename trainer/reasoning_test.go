package trainer

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReasoningEffortUnread: [sampling] reasoning_effort set for a model
// whose chat template does not read it (Qwen3's) trains with one warning
// naming the key; with a template that reads it, none.
func TestReasoningEffortUnread(t *testing.T) {
	dir := t.TempDir()
	cfg := writeRunFixture(t, dir, 1, 0)
	src, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, []byte(strings.Replace(string(src), "max_tokens = 6\n", "max_tokens = 6\nreasoning_effort = \"low\"\n", 1)), 0o644)
	const warning = `[sampling] reasoning_effort = "low" changes nothing`
	var progress bytes.Buffer
	if _, err := runConfig(t, cfg, WithOutput(filepath.Join(dir, "run")), WithProgress(&progress)); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(progress.String(), warning); n != 1 {
		t.Fatalf("%d warnings %q in:\n%s", n, warning, progress.String())
	}
	tpl := "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}<|im_start|>assistant\nReasoning: {{ reasoning_effort }}\n"
	os.WriteFile(filepath.Join(dir, "model", "chat_template.jinja"), []byte(tpl), 0o644)
	progress.Reset()
	if _, err := runConfig(t, cfg, WithOutput(filepath.Join(dir, "run2")), WithProgress(&progress)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(progress.String(), "reasoning_effort") {
		t.Errorf("a template that reads reasoning_effort still warned:\n%s", progress.String())
	}
}
