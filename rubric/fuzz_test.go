package rubric

import (
	"math"
	"testing"
	"unicode/utf8"
)

// FuzzRatio checks properties any difflib ratio has: it lies in [0, 1], a
// string matches itself fully, and a ratio of 1 means equal strings (all of
// both strings lie in matching blocks).
func FuzzRatio(f *testing.F) {
	f.Add("abcd", "bcde")
	f.Add("", "x")
	f.Add("héllo wörld", "dlröw olléh")
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			return
		}
		r := Ratio(a, b)
		if math.IsNaN(r) || r < 0 || r > 1 {
			t.Fatalf("Ratio(%q, %q) = %v outside [0, 1]", a, b, r)
		}
		if Ratio(a, a) != 1 {
			t.Fatalf("Ratio(%q, itself) = %v", a, Ratio(a, a))
		}
		if r == 1 && a != b {
			t.Fatalf("Ratio(%q, %q) = 1 for different strings", a, b)
		}
	})
}

// FuzzAnswerParsing checks that no answer text can make the parsers or
// matchers panic, and that MathEquivalent is reflexive on what it accepts.
func FuzzAnswerParsing(f *testing.F) {
	for _, s := range []string{`\boxed{\frac{1}{2}}`, `#### 1,000`, `<answer>x</answer>`, `\sqrt{`, `2^{`, `((((`, `\frac{}{}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		BoxedAnswer(s)
		HashAnswer(s)
		XMLTag(s, "answer")
		StripThink(s)
		ParseNumber(s)
		EvalMath(s)
		if NormalizeMath(s) != "" && !MathEquivalent(s, s) {
			t.Fatalf("MathEquivalent(%q, itself) = false", s)
		}
	})
}
