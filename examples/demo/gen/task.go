package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/grpo-dev/grpo/env/custom"
)

// writeEnv writes the task: 4000 training and 200 eval words of minLen to
// maxLen letters, and environment.toml.
func writeEnv(dir string, minLen, maxLen int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(2024, 11))
	seen := map[string]bool{}
	word := func() string {
		for {
			b := make([]byte, minLen+rng.IntN(maxLen-minLen+1))
			for i := range b {
				b[i] = byte('a' + rng.IntN(26))
			}
			if w := string(b); !seen[w] {
				seen[w] = true
				return w
			}
		}
	}
	for _, split := range []struct {
		file string
		n    int
	}{{"train.jsonl", 4000}, {"eval.jsonl", 200}} {
		var b strings.Builder
		for range split.n {
			w := word()
			line, _ := json.Marshal(map[string]string{"question": w, "answer": reverse(w)})
			b.Write(line)
			b.WriteByte('\n')
		}
		if err := os.WriteFile(filepath.Join(dir, split.file), []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	toml := fmt.Sprintf(`# The CPU demo's task (written by examples/demo/gen): reverse a short word.
id = "demo-reverse"
description = "reverse a %d-%d letter lowercase word; reward = difflib ratio to the reversal"
prompt_template = "reverse {question}"
parser = "none"

[dataset]
train = "train.jsonl"
eval = "eval.jsonl"

[[rubric]]
type = "ratio"
name = "reversal_ratio"
weight = 1.0
`, minLen, maxLen)
	return os.WriteFile(filepath.Join(dir, custom.ConfigFile), []byte(toml), 0o644)
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}
