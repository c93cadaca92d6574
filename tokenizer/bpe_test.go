package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The heap path (long pieces) must merge exactly as the scan path does.
func TestMergeHeapMatchesScan(t *testing.T) {
	m := qwen3(t).model
	rng := rand.New(rand.NewPCG(7, 7))
	words := []string{"the", " the", "ing", "tion", " and", "er", "中文", "😀", " ", "  ", "1", "ab", "'s", "\n"}
	n := 500
	if testing.Short() {
		n = 50
	}
	for i := 0; i < n; i++ {
		var b strings.Builder
		for b.Len() < 20+rng.IntN(60) {
			b.WriteString(words[rng.IntN(len(words))])
		}
		s := b.String()
		scan := m.mergeScan(s, nil)
		heap := m.mergeHeap(s, nil)
		if !slices.Equal(scan, heap) {
			t.Fatalf("%q: scan %v, heap %v", s, scan, heap)
		}
	}
}

func TestRoundTripCorpus(t *testing.T) {
	for name, tok := range variants(t) {
		for _, s := range corpus(t) {
			if got := tok.Decode(tok.Encode(s)); got != normalizeLike(tok, s) {
				t.Fatalf("%s: decode(encode(%q)) = %q", name, s, got)
			}
		}
	}
}

// normalizeLike applies the tokenizer's normalizer to the text between
// added tokens, which is what decode(encode(s)) gives back.
func normalizeLike(tok *Tokenizer, s string) string {
	var b strings.Builder
	for _, seg := range tok.added.split(s, nil) {
		if seg.token != nil {
			b.WriteString(seg.token.content)
			continue
		}
		text := seg.text
		for _, f := range tok.normalizer {
			text = f.String(text)
		}
		b.WriteString(text)
	}
	return b.String()
}

func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{"", "Hello, world!", "a  b\n\n c", "<|im_end|>x", "中文😀", "e\u0301", "\xff\xfe", "12345", "it's"} {
		f.Add(s)
	}
	tok := qwen3(f)
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Encode(s)
		if got, want := tok.Decode(ids), normalizeLike(tok, s); got != want {
			t.Fatalf("decode(encode(%q)) = %q, want %q", s, got, want)
		}
		for _, id := range ids {
			if _, ok := tok.Token(id); !ok {
				t.Fatalf("encode(%q) produced id %d outside the vocabulary", s, id)
			}
		}
	})
}
