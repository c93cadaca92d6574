package rubric

import (
	"math"
	"math/big"
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
// matchers panic, and that MathEquivalent is reflexive on what it extracts.
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
		// MathRubric wraps an answer in \boxed{} before extracting it, so
		// what is compared is the extracted text ("\boxed{" itself leaves
		// nothing).
		if NormalizeMath(extractBoxedContent(`\boxed{`+s+`}`)) != "" && !MathEquivalent(s, s) {
			t.Fatalf("MathEquivalent(%q, itself) = false", s)
		}
	})
}

// FuzzMathVerify checks that no pair of answers can make the LaTeX
// normaliser, parser or comparison panic or hang, and that an answer with
// an exact rational value matches that value written as a fraction, as
// math-verify's exact comparison does (2+16 is 18, \sqrt{8}\cdot\sqrt{2}
// is 4).
func FuzzMathVerify(f *testing.F) {
	for _, s := range [][2]string{
		{`\frac{36}{2}`, "18"}, {`(x-1)(x+1)`, `x^2-1`}, {`[1, \frac{5}{2})`, `[1,2.5)`},
		{`\sqrt[3]{-8}`, "-2"}, {`2^{1000}`, `2^{999}`}, {`x=\{1,2\}`, `\left(3\right)`},
		{`\boxed{1}, \boxed{2}`, "1,2"}, {`10^{-2}\%`, "0.0001"}, {`((((((`, `\frac{}{}`},
		{`\sqrt{8}\cdot\sqrt{2}`, "4"}, {`2\frac{1}{2}-\frac{3}{4}`, ""},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		MathVerify(a, b)
		MathVerify(b, a)
		n, ok := parseMath(NormalizeMath(extractBoxedContent(`\boxed{` + a + `}`)))
		if !ok || !arithmeticOnly(n) || hasFloat(n) {
			return
		}
		v, ok := evalExact(n)
		if !ok || v.Num().BitLen() > 200 || v.Denom().BitLen() > 200 {
			return
		}
		frac := `\frac{` + new(big.Int).Abs(v.Num()).String() + "}{" + v.Denom().String() + "}"
		if v.Sign() < 0 {
			frac = "-" + frac
		}
		if !MathVerify(a, frac) || !MathVerify(frac, a) {
			t.Fatalf("%q has the exact value %s but MathVerify does not match it", a, frac)
		}
	})
}

func hasFloat(n *mathNode) bool {
	if n.float {
		return true
	}
	for _, a := range n.args {
		if hasFloat(a) {
			return true
		}
	}
	return false
}
