package main

import (
	"strings"
	"testing"
)

// TestServeHelpAndFlags: --help lists the API and the flags; a malformed
// --adapter or a missing model is a usage error naming the fix.
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
}
