package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/internal/tinymodel"
)

// runCLI runs grpo in-process and returns its exit code, stdout and stderr.
func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := runMain(args, &out, &errb)
	return code, out.String(), errb.String()
}

func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(src, e.Name()))
		os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644)
	}
	return dst
}

// TestLogprobsBadInput: every kind of bad input gets one line on stderr
// that names the problem (and the file, when a file is at fault) and a
// non-zero exit code; nothing panics.
func TestLogprobsBadInput(t *testing.T) {
	tiny := filepath.Join("..", "..", "testdata", "models", "qwen3-tiny")
	truncated := copyDir(t, tiny)
	st := filepath.Join(truncated, "model.safetensors")
	data, _ := os.ReadFile(st)
	os.WriteFile(st, data[:len(data)/3], 0o644)
	headerBeyond := copyDir(t, tiny)
	hb := filepath.Join(headerBeyond, "model.safetensors")
	os.WriteFile(hb, []byte{0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0, '{', '}'}, 0o644)
	badType := copyDir(t, tiny)
	cfg, _ := os.ReadFile(filepath.Join(badType, "config.json"))
	os.WriteFile(filepath.Join(badType, "config.json"), []byte(strings.Replace(string(cfg), `"qwen3"`, `"gpt_neox"`, 1)), 0o644)
	noWeights := copyDir(t, tiny)
	os.Remove(filepath.Join(noWeights, "model.safetensors"))
	mismatch := filepath.Join(t.TempDir(), "mismatch")
	if err := tinymodel.WriteVocabMismatch(mismatch, tiny); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"no ids", []string{"logprobs", "--model", tiny}, []string{"--ids is required"}},
		{"bad id", []string{"logprobs", "--model", tiny, "--ids", "1,x,3"}, []string{`"x" (item 2)`}},
		{"negative id", []string{"logprobs", "--model", tiny, "--ids", "1,-3"}, []string{`"-3"`}},
		{"one id", []string{"logprobs", "--model", tiny, "--ids", "5"}, []string{"at least two ids"}},
		{"start too far", []string{"logprobs", "--model", tiny, "--ids", "1,2,3", "--start", "3"}, []string{"--start 3"}},
		{"id beyond vocab", []string{"logprobs", "--model", tiny, "--ids", "1,9999"}, []string{"id 9999", "vocabulary of 512"}},
		{"missing model", []string{"logprobs", "--model", "/no/such/dir", "--ids", "1,2"}, []string{"/no/such/dir"}},
		{"truncated weights", []string{"logprobs", "--model", truncated, "--ids", "1,2"}, []string{st}},
		{"header beyond file", []string{"logprobs", "--model", headerBeyond, "--ids", "1,2"}, []string{hb}},
		{"unsupported model_type", []string{"logprobs", "--model", badType, "--ids", "1,2"}, []string{"gpt_neox", "llama, nemotron_h, qwen2, qwen3"}},
		{"no weights", []string{"logprobs", "--model", noWeights, "--ids", "1,2"}, []string{"model.safetensors"}},
		{"tokenizer beyond the model's vocabulary", []string{"logprobs", "--model", mismatch, "--ids", "1,2"}, []string{"the tokenizer has 513 tokens but the model's vocab_size is 512"}},
		{"prompt without completion", []string{"logprobs", "--model", tiny, "--prompt", "hi"}, []string{"--prompt and --completion go together"}},
		{"unknown flag", []string{"logprobs", "--modle", tiny}, []string{"-modle"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(tc.args...)
			if code == 0 {
				t.Fatalf("exit 0; stdout %q", stdout)
			}
			if strings.Count(strings.TrimRight(stderr, "\n"), "\n") != 0 {
				t.Errorf("stderr has several lines:\n%s", stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not mention %q", stderr, w)
				}
			}
		})
	}
}

func TestLogprobsPromptCompletion(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "model")
	if err := tinymodel.Write(dir, filepath.Join("..", "..", "testdata", "models", "qwen3-tiny")); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI("logprobs", "--model", dir, "--prompt", "reverse cat", "--completion", "tac")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		Logprobs []float32
		IDs      []int32
		Start    int
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	// Byte tokens: "reverse cat" is 11 tokens, "tac" 3.
	if got.Start != 11 || len(got.IDs) != 14 || len(got.Logprobs) != 3 {
		t.Fatalf("start %d, %d ids, %d logprobs", got.Start, len(got.IDs), len(got.Logprobs))
	}
	var ids []string
	for _, id := range got.IDs {
		ids = append(ids, strconv.Itoa(int(id)))
	}
	code, stdout2, _ := runCLI("logprobs", "--model", dir, "--ids", strings.Join(ids, ","), "--start", "11")
	var byIDs struct{ Logprobs []float32 }
	json.Unmarshal([]byte(stdout2), &byIDs)
	if code != 0 || len(byIDs.Logprobs) != 3 || byIDs.Logprobs[2] != got.Logprobs[2] {
		t.Errorf("--ids gives %v, --prompt/--completion %v", byIDs.Logprobs, got.Logprobs)
	}
}
