package tokenizer

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// englishDocs are the GSM8K examples of the testdata slice, each question
// and answer joined by a newline.
func englishDocs(b *testing.B) []string {
	var docs []string
	for _, l := range readLines(b, filepath.Join(testdata, "gsm8k/train-head.jsonl.gz")) {
		var ex struct{ Question, Answer string }
		if err := json.Unmarshal(l, &ex); err != nil {
			b.Fatal(err)
		}
		docs = append(docs, ex.Question+"\n"+ex.Answer)
	}
	return docs
}

// englishText is the GSM8K slice in testdata (questions and answers,
// about 1.1 MB), the same text scripts/tokenizer-parity/bench.mjs encodes.
func englishText(b *testing.B) string { return strings.Join(englishDocs(b), "\n\n") }

// BenchmarkEncodeEnglish: warm cache, the steady state of a training run.
func BenchmarkEncodeEnglish(b *testing.B) {
	tok := qwen3(b)
	text := englishText(b)
	tok.Encode(text)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		tok.Encode(text)
	}
}

// BenchmarkEncodeEnglishCold empties the BPE cache before every pass.
func BenchmarkEncodeEnglishCold(b *testing.B) {
	tok := qwen3(b)
	text := englishText(b)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		b.StopTimer()
		tok.model.cache = map[string][]int32{}
		b.StartTimer()
		tok.Encode(text)
	}
}

// BenchmarkEncodeEnglishPerExample encodes example by example, as a
// trainer does.
func BenchmarkEncodeEnglishPerExample(b *testing.B) {
	tok := qwen3(b)
	docs := englishDocs(b)
	n := 0
	for _, d := range docs {
		n += len(d)
		tok.Encode(d)
	}
	b.SetBytes(int64(n))
	b.ResetTimer()
	for b.Loop() {
		for _, d := range docs {
			tok.Encode(d)
		}
	}
}

func BenchmarkDecodeEnglish(b *testing.B) {
	tok := qwen3(b)
	text := englishText(b)
	ids := tok.Encode(text)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.Decode(ids)
	}
}
