package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Hand-checked pieces for the Qwen pattern, one rule each.
func TestScannerCases(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"Hello world", []string{"Hello", " world"}},
		{"I'm DON'T it'S", []string{"I", "'m", " DON", "'T", " it", "'S"}},
		{"it'ſt", []string{"it", "'ſt"}}, // ' + letters: (?i) does not fold ſ to s
		{"12345", []string{"1", "2", "3", "4", "5"}},
		{"a  b", []string{"a", " ", " b"}},             // \s+(?!\S) leaves one space
		{"a   \n\n b", []string{"a", "   \n\n", " b"}}, // \s*[\r\n]+
		{"x  ", []string{"x", "  "}},                   // run at end of text
		{"\tx", []string{"\tx"}},                       // any non-newline prefix
		{"\nx", []string{"\n", "x"}},
		{" ...!\n\nx", []string{" ...!\n\n", "x"}},
		{"(hello)", []string{"(hello", ")"}},
		{"a\u0085 b", []string{"a", "\u0085", " b"}}, // U+0085 is \s
		{"a \u0085b", []string{"a", " ", "\u0085b"}}, // …and a letter prefix
		// U+FEFF is not \s but "other": a punctuation-like run.
		{"a\ufeff\ufeffb", []string{"a", "\ufeff\ufeff", "b"}},
	} {
		got := (&scanner{maxDigits: 1}).split(tc.in, nil)
		if !slices.Equal(got, tc.want) {
			t.Errorf("split(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := (&scanner{maxDigits: 3}).split("1234567", nil); !slices.Equal(got, []string{"123", "456", "7"}) {
		t.Errorf("llama3 digits: %q", got)
	}
}

// The hand-written scanner must split exactly as the general regexp2 path
// does with the same pattern, on random text drawn from the characters
// that decide splits.
func TestScannerMatchesRegexp2(t *testing.T) {
	alphabet := []string{"a", "Z", "é", "中", "ж", "1", "٣", "½", "'", "s", "S", "t", "r", "e", "v", "m", "l", "L", "d",
		" ", " ", "\t", "\n", "\r", "\u00a0", "\u3000", "\u0085", "\u2028", "\ufeff", ".", "!", "(", "😀", "\u0301", "_", "\x00"}
	for _, c := range []struct {
		pattern   string
		maxDigits int
	}{{qwenPattern, 1}, {llama3Pattern, 3}} {
		re, err := newRegexSplitter(c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		sc := &scanner{maxDigits: c.maxDigits}
		rng := rand.New(rand.NewPCG(1, uint64(c.maxDigits)))
		n := 3000
		if testing.Short() {
			n = 300
		}
		for i := 0; i < n; i++ {
			var b strings.Builder
			for k := rng.IntN(30); k >= 0; k-- {
				b.WriteString(alphabet[rng.IntN(len(alphabet))])
			}
			s := b.String()
			want := re.split(s, nil)
			if got := sc.split(s, nil); !slices.Equal(got, want) {
				t.Fatalf("maxDigits %d: scanner %q, regexp2 %q on %q", c.maxDigits, got, want, s)
			}
		}
	}
}
