package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// mintokenCases are texts where the byte count misleads: normalization
// that shrinks them (NFC composes Hangul jamo 9 bytes → 3; NFKC would map
// the 4-byte 𝐀 to "A"), added tokens written in the text, invalid UTF-8
// and long runs that merge into the vocabulary's longest entries.
var mintokenCases = []string{
	"", "a", "hello world", strings.Repeat("각", 50), strings.Repeat("𝐀", 40),
	"e\u0301e\u0301\u0323", "<|im_start|>user\nhi<|im_end|>" + strings.Repeat("<|im_end|>", 30),
	"\xff\xfe\x80", strings.Repeat(" ", 500), strings.Repeat("=", 300), strings.Repeat("----", 100),
	strings.Repeat("\n", 200) + "x", "Ω Å ά",
}

// TestMinTokensIsALowerBound: the bound never exceeds the real count (no
// prompt that fits is refused), reaches it within the longest entry's
// factor, and stops at limit.
func TestMinTokensIsALowerBound(t *testing.T) {
	tok := qwen3(t)
	if l := tok.longestPiece(); l < 16 || l > 1024 {
		t.Fatalf("longest piece %d bytes: not Qwen3's vocabulary", l)
	}
	for _, s := range append(mintokenCases, corpus(t)...) {
		n := len(tok.Encode(s))
		if got := tok.MinTokens(s, 1<<30); got > n {
			t.Errorf("MinTokens(%.40q) = %d > %d tokens", s, got, n)
		}
		if got := tok.MinTokens(s, 3); got > min(n, 3) {
			t.Errorf("MinTokens(%.40q, 3) = %d, want ≤ %d", s, got, min(n, 3))
		}
	}
	huge := strings.Repeat("abc ", 1<<22) // 16 MiB
	if got := tok.MinTokens(huge, 4096); got != 4096 {
		t.Errorf("a 16 MiB text: bound %d, want the limit 4096", got)
	}
	allocs := testing.AllocsPerRun(3, func() { tok.MinTokens(huge, 4096) })
	if allocs > 4 {
		t.Errorf("MinTokens allocates %v times; it must not copy the text", allocs)
	}
}

// FuzzMinTokens: for any text the bound is at most the real count.
func FuzzMinTokens(f *testing.F) {
	for _, s := range mintokenCases {
		f.Add(s)
	}
	tok := qwen3(f)
	f.Fuzz(func(t *testing.T, s string) {
		n := len(tok.Encode(s))
		if got := tok.MinTokens(s, 1<<30); got > n {
			t.Fatalf("MinTokens(%q) = %d > %d tokens (valid UTF-8: %v)", s, got, n, utf8.ValidString(s))
		}
	})
}
