package tokenizer

import (
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
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
	// Marks of each kind (Mn, Mc, Me) and scripts that use them.
	alphabet = append(alphabet, "\u0308", "\u20dd", "क", "\u093f", "\u094d", "ก", "\u0e48", "\u05b4", "\u200d")
	for k, c := range []struct {
		pattern   string
		maxDigits int
		marks     bool
	}{{qwenPattern, 1, false}, {llama3Pattern, 3, false}, {qwen35Pattern, 1, true}} {
		re, err := newRegexSplitter(c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		sc := &scanner{maxDigits: c.maxDigits, marksInWords: c.marks}
		rng := rand.New(rand.NewPCG(1, uint64(k)))
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
				t.Fatalf("pattern %d: scanner %q, regexp2 %q on %q", k, got, want, s)
			}
		}
	}
}

// TestQwen35Split checks the scanner on Qwen3.5's pattern (and on Qwen3's,
// which the same strings cut differently) against the `regex` module's
// matches, written by scripts/chat-goldens/qwen35_split.py: combining
// marks after Latin letters, in Devanagari, Thai, Vietnamese, Hebrew and
// Arabic, after spaces, digits, punctuation and contractions.
func TestQwen35Split(t *testing.T) {
	var cases []struct {
		Text   string   `json:"text"`
		Qwen3  []string `json:"qwen3"`
		Qwen35 []string `json:"qwen35"`
	}
	if err := json.Unmarshal(readGz(t, filepath.Join(testdata, "split-qwen35.json")), &cases); err != nil {
		t.Fatal(err)
	}
	differ := 0
	for _, c := range cases {
		for _, p := range []struct {
			pattern string
			want    []string
		}{{qwenPattern, c.Qwen3}, {qwen35Pattern, c.Qwen35}} {
			sp, err := newSplitter(p.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if _, fast := sp.(*scanner); !fast {
				t.Fatalf("pattern %q does not get the scanner", p.pattern)
			}
			if got := sp.split(c.Text, nil); !slices.Equal(got, p.want) {
				t.Errorf("%q: got %q, want %q", c.Text, got, p.want)
			}
		}
		if !slices.Equal(c.Qwen3, c.Qwen35) {
			differ++
		}
	}
	if len(cases) < 15 || differ < 10 {
		t.Fatalf("split-qwen35.json has %d strings, %d split differently by the two patterns; regenerate it", len(cases), differ)
	}
}
