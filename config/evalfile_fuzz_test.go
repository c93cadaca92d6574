package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseEval: an eval config (configs/eval/*.toml) never panics the
// parser or Specs, and a rejected one gets error lines that each name the
// file (or are the "(N more…)" line), as few as MaxProblems plus one.
func FuzzParseEval(f *testing.F) {
	// grpo init's eval files: Lab's current ones and the legacy ones.
	seeds, _ := filepath.Glob(filepath.Join("..", "examples", "*", "configs", "eval", "*.toml"))
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("model = 'm'\n[[eval]]\nid = 'a'\nnum_examples = -1\n"))
	f.Add([]byte("seed = \"x\"\n[[eval]]\nid = 1\n[eval.sampling_args]\n"))
	f.Add([]byte("[[eval]]\nid='a'\nrollouts_per_example=0\n[[eval]]\nid='b'\nargs={n=[1,{m=2}]}\n"))
	f.Add([]byte("ä = 1\n[eval]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ef, err := ParseEval(data, "fuzz.toml")
		if err != nil {
			lines := strings.Split(err.Error(), "\n")
			for _, l := range lines {
				if !strings.HasPrefix(l, "fuzz.toml") && !strings.HasPrefix(l, "(") {
					t.Fatalf("error line without the file: %q", err)
				}
			}
			if len(lines) > MaxProblems+1 {
				t.Fatalf("%d error lines: %q", len(lines), err)
			}
			return
		}
		_, _ = ef.Specs(EvalOverrides{})
	})
}
