package config

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSeveralMistakes: a config with several mistakes reports every one,
// one line each, in file order — values and env ids together (a missing
// key, a range, an unknown env id), and unknown keys and wrong types
// together. The expectations are the file's "# want LINE: text" lines.
func TestSeveralMistakes(t *testing.T) {
	files, _ := filepath.Glob("testdata/configs/several/*.toml")
	if len(files) < 2 {
		t.Fatalf("%d fixtures", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			wants := readWants(t, f)
			_, err := LoadWith(f, ParseOptions{Envs: testEnvCheck})
			if err == nil {
				t.Fatal("no error")
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(wants) {
				t.Fatalf("%d lines, want %d:\n%s", len(lines), len(wants), err)
			}
			for i, w := range wants {
				prefix := f + ": "
				if w.line > 0 {
					prefix = fmt.Sprintf("%s:%d:", f, w.line)
				}
				if !strings.HasPrefix(lines[i], prefix) || !strings.Contains(lines[i], w.text) {
					t.Errorf("line %d\n  %s\nwant prefix %q and text %q", i+1, lines[i], prefix, w.text)
				}
			}
		})
	}
}

type want struct {
	line int
	text string
}

func readWants(t *testing.T, path string) []want {
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []want
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		m := wantLine.FindStringSubmatch(sc.Text())
		if m == nil {
			break
		}
		n, _ := strconv.Atoi(m[1])
		out = append(out, want{n, m[2]})
	}
	return out
}

// TestProblemsCapped: past MaxProblems the error says how many more.
func TestProblemsCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("model = \"m\"\n")
	for i := range 12 {
		fmt.Fprintf(&b, "unknown_%d = 1\n", i)
	}
	b.WriteString("[[env]]\nid = \"reverse-text\"\n")
	_, err := Parse([]byte(b.String()), "many.toml")
	if err == nil {
		t.Fatal("no error")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != MaxProblems+1 || !strings.HasPrefix(lines[0], "many.toml:2:1:") || lines[MaxProblems] != "(2 more problems not shown: fix these first)" {
		t.Errorf("got %d lines:\n%s", len(lines), err)
	}
}

// TestSamplingOptional: [sampling], or its max_tokens, may be left out;
// max_tokens is then DefaultMaxTokens.
func TestSamplingOptional(t *testing.T) {
	for name, text := range map[string]string{
		"no table":      "model = \"m\"\n[[env]]\nid = \"reverse-text\"\n",
		"no max_tokens": "model = \"m\"\n[sampling]\ntemperature = 0.8\n[[env]]\nid = \"reverse-text\"\n",
	} {
		c, err := Parse([]byte(text), "s.toml")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c.Sampling.MaxTokens != DefaultMaxTokens || DefaultMaxTokens != 1024 {
			t.Errorf("%s: max_tokens %d, want 1024", name, c.Sampling.MaxTokens)
		}
	}
	_, err := Parse([]byte("model = \"m\"\n[sampling]\nmax_tokens = 0\n[[env]]\nid = \"reverse-text\"\n"), "s.toml")
	if err == nil || !strings.HasPrefix(err.Error(), "s.toml:3:1: [sampling] max_tokens = 0: must be at least 1") {
		t.Errorf("max_tokens 0: %v", err)
	}
}
