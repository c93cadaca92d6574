package rubric

import "testing"

func TestParseNumber(t *testing.T) {
	good := map[string]float64{
		"72": 72, " 1,234 ": 1234, "$18.00": 18, "45%": 45, "-3.5": -3.5,
		"72.": 72, "1e-3": 0.001, "3/4": 0.75, "−2": -2, "+7": 7, "-$5": -5,
		"2.5E2": 250,
	}
	for s, want := range good {
		if got, ok := ParseNumber(s); !ok || got != want {
			t.Errorf("ParseNumber(%q) = %v, %v; want %v", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "abc", "NaN", "inf", "0x10", "1_000", "1/0", "3/", "1e999", "e5", ".", "1 2"} {
		if v, ok := ParseNumber(s); ok {
			t.Errorf("ParseNumber(%q) = %v, want rejection", s, v)
		}
	}
}

func TestNumericAndExactMatch(t *testing.T) {
	yes := [][2]string{{"18", "$18.00"}, {"1,000", "1000"}, {"0.75", "3/4"}, {"100000000", "1e8"}, {"0.3333333", "0.33333333"}}
	no := [][2]string{{"18", "19"}, {"0.333", "1/3"}, {"x", "x"}, {"", "0"}}
	for _, p := range yes {
		if !NumericMatch(p[0], p[1]) {
			t.Errorf("NumericMatch(%q, %q) = false", p[0], p[1])
		}
	}
	for _, p := range no {
		if NumericMatch(p[0], p[1]) {
			t.Errorf("NumericMatch(%q, %q) = true", p[0], p[1])
		}
	}
	if !ExactMatch(" Paris\n", "Paris") || ExactMatch("paris", "Paris") {
		t.Error("ExactMatch should trim but stay case-sensitive")
	}
}

func TestMathEquivalent(t *testing.T) {
	yes := [][2]string{
		{`\frac{1}{2}`, `0.5`},
		{`\dfrac{3}{4}`, `\frac34`},
		{`\tfrac12`, `1/2`},
		{`\left( 1, 2 \right)`, `(1,2)`},
		{`90^\circ`, `90`},
		{`\$5.00`, `5`},
		{`$\frac{\sqrt{3}}{2}$`, `\frac{\sqrt3}{2}`},
		{`2\sqrt{2}`, `\sqrt{8}`},
		{`x = 5`, `5`},
		{`10\!000`, `10000`},
		{`1,234`, `1234`},
		{`-.5`, `-\frac{1}{2}`},
		{`5 \text{ cm}`, `5`},
		{`\text{(A)}`, `(A)`},
		{`2^{10}`, `1024`},
		{`3\pi`, `\frac{6\pi}{2}`},
		{`[1, \frac{1}{2})`, `[1,0.5)`},
		{`x+1`, `x + 1`},
		{`x+1`, `1+x`}, // math-verify compares expressions symbolically
	}
	no := [][2]string{
		{`\frac{1}{3}`, `0.333`},
		{`(1,2)`, `[1,2]`},
		{`(1,2)`, `(2,1)`},
		{`2\frac{1}{2}`, `5`}, // mixed number: not guessed
		{`50\%`, `50`},        // math-verify: 50\% is 1/2
		{``, ``},
		{`\frac{1}{0}`, `\frac{2}{0}`},
	}
	for _, p := range yes {
		if !MathEquivalent(p[0], p[1]) {
			t.Errorf("MathEquivalent(%q, %q) = false (normalised %q, %q)", p[0], p[1], NormalizeMath(p[0]), NormalizeMath(p[1]))
		}
	}
	for _, p := range no {
		if MathEquivalent(p[0], p[1]) {
			t.Errorf("MathEquivalent(%q, %q) = true (normalised %q, %q)", p[0], p[1], NormalizeMath(p[0]), NormalizeMath(p[1]))
		}
	}
}

func TestEvalMath(t *testing.T) {
	good := map[string]float64{
		`1+2*3`: 7, `(1+2)*3`: 9, `-2^2`: -4, `2^{-1}`: 0.5, `\frac{1}{4}`: 0.25,
		`6\div3`: 2, `2\cdot3`: 6, `2\times3`: 6, `\sqrt{16}`: 4, `{2}`: 2,
	}
	for s, want := range good {
		if got, ok := EvalMath(s); !ok || got != want {
			t.Errorf("EvalMath(%q) = %v, %v; want %v", s, got, ok, want)
		}
	}
	for _, s := range []string{`x`, `2x`, `\sqrt{-1}`, `1/0`, `(1`, `1)`, `\frac{1}`, `2^`, `1,2`, `\log{2}`} {
		if v, ok := EvalMath(s); ok {
			t.Errorf("EvalMath(%q) = %v, want failure", s, v)
		}
	}
}
