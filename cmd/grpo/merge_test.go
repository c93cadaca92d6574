package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// runCaptured runs the CLI with args, capturing what it writes to os.Stdout
// (logprobs prints there) and stderr.
func runCaptured(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = w
	var errBuf bytes.Buffer
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); done <- b }()
	code = runMain(args, w, &errBuf)
	os.Stdout = saved
	w.Close()
	return code, string(<-done), errBuf.String()
}

// goldenLogprobs reads testdata/lora/NAME.{json,f32} (peft_check.py's
// float64 logits of the model with the adapter) and returns the tokens and
// log p(tokens[t] | tokens[:t]) for t ≥ 1, by a float64 log-softmax.
func goldenLogprobs(t *testing.T, name string) ([]int32, []float64) {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "lora")
	raw, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Tokens []int32 `json:"tokens"`
		Shape  []int   `json:"shape"`
	}
	json.Unmarshal(raw, &g)
	b, err := os.ReadFile(filepath.Join(dir, name+".f32"))
	if err != nil {
		t.Fatal(err)
	}
	v := g.Shape[1]
	var lp []float64
	for pos := 0; pos+1 < len(g.Tokens); pos++ {
		row := make([]float64, v)
		mx := math.Inf(-1)
		for i := range row {
			row[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*(pos*v+i):])))
			mx = math.Max(mx, row[i])
		}
		s := 0.0
		for _, x := range row {
			s += math.Exp(x - mx)
		}
		lp = append(lp, row[g.Tokens[pos+1]]-mx-math.Log(s))
	}
	return g.Tokens, lp
}

func idsArg(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

func checkLogprobs(t *testing.T, stdout string, want []float64) {
	t.Helper()
	var got struct{ Logprobs []float64 }
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("output %q: %v", stdout, err)
	}
	if len(got.Logprobs) != len(want) {
		t.Fatalf("%d logprobs, want %d", len(got.Logprobs), len(want))
	}
	for i := range want {
		if d := math.Abs(got.Logprobs[i] - want[i]); d > 1e-4 {
			t.Fatalf("logprob %d: %v, reference %v (|Δ| %g > 1e-4)", i, got.Logprobs[i], want[i], d)
		}
	}
}

// TestLogprobsAdapter: `grpo logprobs --adapter` on the adapter grpo wrote
// (ours, qwen3-tiny) and on the one peft_check.py wrote (theirs,
// qwen2-tiny) gives the independent reader's log-probabilities.
func TestLogprobsAdapter(t *testing.T) {
	for _, c := range []struct{ golden, model string }{{"ours", "qwen3-tiny"}, {"theirs", "qwen2-tiny"}} {
		t.Run(c.golden, func(t *testing.T) {
			tokens, want := goldenLogprobs(t, c.golden)
			code, out, errOut := runCaptured(t, "logprobs", "--model", filepath.Join("..", "..", "testdata", "models", c.model),
				"--adapter", filepath.Join("..", "..", "testdata", "lora", c.golden), "--ids", idsArg(tokens), "--start", "1")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			checkLogprobs(t, out, want)
		})
	}
}

// TestMergeCommand: `grpo merge` writes a model whose plain log-probs are
// the adapter's; a bad adapter is one error line and exit status 1.
func TestMergeCommand(t *testing.T) {
	tokens, want := goldenLogprobs(t, "theirs")
	out := filepath.Join(t.TempDir(), "merged")
	modelDir := filepath.Join("..", "..", "testdata", "models", "qwen2-tiny")
	code, _, errOut := runCaptured(t, "merge", "--model", modelDir, "--adapter", filepath.Join("..", "..", "testdata", "lora", "theirs"), "--out", out)
	if code != 0 {
		t.Fatalf("merge: exit %d: %s", code, errOut)
	}
	code, stdout, errOut := runCaptured(t, "logprobs", "--model", out, "--ids", idsArg(tokens))
	if code != 0 {
		t.Fatalf("logprobs: exit %d: %s", code, errOut)
	}
	checkLogprobs(t, stdout, want)

	// The adapter was trained for qwen2-tiny; llama-tiny's k/v are smaller.
	code, _, errOut = runCaptured(t, "merge", "--model", filepath.Join("..", "..", "testdata", "models", "llama-tiny"),
		"--adapter", filepath.Join("..", "..", "testdata", "lora", "theirs"), "--out", filepath.Join(t.TempDir(), "x"))
	if code != 1 || !strings.Contains(errOut, "has shape [64 6], want [16 6]") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runCaptured(t, "merge", "--model", modelDir, "--out", out)
	if code != 2 || !strings.Contains(errOut, "--adapter is required") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}
