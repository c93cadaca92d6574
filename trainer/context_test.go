package trainer

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestContextShorterThanRollouts: a model whose max_position_embeddings is
// below prompt + max_tokens trains (completions are cut at the context)
// with a warning that names both numbers and the fix.
func TestContextShorterThanRollouts(t *testing.T) {
	dir := t.TempDir()
	cfg := writeRunFixture(t, dir, 1, 0)
	mcPath := filepath.Join(dir, "model", "config.json")
	mc, _ := os.ReadFile(mcPath)
	// The reverse env's prompts render to about 31 tokens: they fit 34, 6 more do not.
	os.WriteFile(mcPath, regexp.MustCompile(`"max_position_embeddings": \d+`).ReplaceAll(mc, []byte(`"max_position_embeddings": 34`)), 0o644)
	var progress bytes.Buffer
	if _, err := runConfig(t, cfg, WithOutput(filepath.Join(dir, "run")), WithProgress(&progress)); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`longest prompt \((\d+) tokens.*\+ \[sampling\] max_tokens = 6 × 1 turn\(s\) is (\d+) tokens, beyond the model's max_position_embeddings = 34`).FindStringSubmatch(progress.String())
	if m == nil {
		t.Fatalf("no warning naming the prompt, max_tokens and the context:\n%s", progress.String())
	}
	p, _ := strconv.Atoi(m[1])
	if n, _ := strconv.Atoi(m[2]); n != p+6 || !strings.Contains(progress.String(), "lower max_tokens to at most "+strconv.Itoa(34-p)) {
		t.Errorf("numbers do not add up: %s", m[0])
	}
}
