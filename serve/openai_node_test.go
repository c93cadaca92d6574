package serve

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestOpenAINodeClient runs scripts/openai-client/test.mjs — the official
// openai npm package (pinned by package-lock.json) — against the server
// on the tiny model: chat, streaming, completions with token ids and
// echo, logprobs, tools, a LoRA loaded at run time, 64 concurrent streams
// and clients killed mid-stream. It installs the package with npm ci when
// node_modules is missing; it is skipped only when node is not installed.
func TestOpenAINodeClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the openai npm client test needs Node.js (.ci/run installs it; apt-get install nodejs npm)")
	}
	if testing.Short() {
		t.Skip("-short: skipping the openai npm client test")
	}
	dir, err := filepath.Abs(filepath.Join("..", "scripts", "openai-client"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			t.Fatalf("scripts/openai-client has no node_modules and npm is not installed: run npm ci there")
		}
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in scripts/openai-client: %v\n%s", err, out)
		}
	}
	lora, err := filepath.Abs(filepath.Join("..", "testdata", "lora", "ours"))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, Config{Slots: 8, MaxQueue: 64, MaxLen: 512})
	cmd := exec.Command(node, "test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GRPO_URL="+f.url, "GRPO_LORA="+lora)
	out, err := cmd.CombinedOutput()
	t.Logf("node test.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("the openai client test failed: %v", err)
	}
}
