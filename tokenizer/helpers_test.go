package tokenizer

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

const testdata = "../testdata/tokenizer"

var (
	qwen3Once sync.Once
	qwen3Tok  *Tokenizer
	qwen3Err  error
)

// qwen3 loads the real Qwen3 tokenizer once per test binary.
func qwen3(t testing.TB) *Tokenizer {
	t.Helper()
	qwen3Once.Do(func() {
		qwen3Tok, qwen3Err = LoadFiles(filepath.Join(testdata, "qwen3/tokenizer.json.gz"), filepath.Join(testdata, "qwen3/tokenizer_config.json.gz"))
	})
	if qwen3Err != nil {
		t.Fatal(qwen3Err)
	}
	return qwen3Tok
}

func readGz(t testing.TB, path string) []byte {
	t.Helper()
	data, err := readMaybeGzip(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// readLines returns the lines of a (possibly gzipped) text file.
func readLines(t testing.TB, path string) [][]byte {
	t.Helper()
	data := readGz(t, path)
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// corpus returns the strings of testdata/tokenizer/corpus.jsonl.
func corpus(t testing.TB) []string {
	t.Helper()
	var out []string
	for i, l := range readLines(t, filepath.Join(testdata, "corpus.jsonl")) {
		var s string
		if err := json.Unmarshal(l, &s); err != nil {
			t.Fatalf("corpus.jsonl line %d: %v", i+1, err)
		}
		out = append(out, s)
	}
	return out
}

func gzipBytes(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
