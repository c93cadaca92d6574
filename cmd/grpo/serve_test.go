package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/internal/tinymodel"
)

// TestServeHelpAndFlags: --help lists the API and the flags; a malformed
// --adapter or a missing model is a usage error naming the fix; a model
// whose tokenizer outgrows its vocabulary is refused in one line.
func TestServeHelpAndFlags(t *testing.T) {
	code, out, _ := runCLI("serve", "--help")
	for _, want := range []string{"/v1/chat/completions", "/v1/load_lora_adapter", "return_token_ids", "--adapter", "--slots", "--max-queue", "429"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("serve --help (exit %d) lacks %q", code, want)
		}
	}
	code, _, stderr := runCLI("serve", "m", "--adapter", "nodir")
	if code != 2 || !strings.Contains(stderr, "want NAME=DIR") {
		t.Errorf("bad --adapter: exit %d: %s", code, stderr)
	}
	code, _, stderr = runCLI("serve", "--adapter", "a=x", "--adapter", "a=y", "m")
	if code != 2 || !strings.Contains(stderr, `"a" is given twice`) {
		t.Errorf("repeated adapter name: exit %d: %s", code, stderr)
	}
	code, _, stderr = runCLI("serve")
	if code != 2 || !strings.Contains(stderr, "give one model") {
		t.Errorf("no model: exit %d: %s", code, stderr)
	}
	// Limits the model cannot meet are refused at start, naming the flag
	// (the host is not this machine's, as below).
	tiny := filepath.Join(t.TempDir(), "tiny")
	if err := tinymodel.Write(tiny, filepath.Join("..", "..", "testdata", "models", "qwen3-tiny")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ flags []string }{{[]string{"--max-len", "100000"}}, {[]string{"--slots", "1000000000"}}} {
		code, _, stderr = runCLI(append([]string{"serve", tiny, "--host", "192.0.2.1"}, c.flags...)...)
		if code != 1 || !strings.Contains(stderr, c.flags[0]) || strings.Contains(stderr, "listening") {
			t.Errorf("%v: exit %d: %s", c.flags, code, stderr)
		}
	}
	mismatch := filepath.Join(t.TempDir(), "mismatch")
	if err := tinymodel.WriteVocabMismatch(mismatch, filepath.Join("..", "..", "testdata", "models", "qwen3-tiny")); err != nil {
		t.Fatal(err)
	}
	// The host is not this machine's: a serve that took the model would
	// fail to listen, not serve forever.
	code, _, stderr = runCLI("serve", mismatch, "--host", "192.0.2.1")
	if code != 1 || strings.Count(strings.TrimSpace(stderr), "\n") > 0 || !strings.Contains(stderr, "the tokenizer has 513 tokens but the model's vocab_size is 512") {
		t.Errorf("a tokenizer beyond the model's vocabulary: exit %d: %s", code, stderr)
	}
}
