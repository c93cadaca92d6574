package rubric

import (
	"regexp"
	"strings"
)

// MathEquivalent reports whether two final answers of a math problem are the
// same, in the spirit of the MATH benchmark's normalised comparison: both are
// normalised (NormalizeMath), then compared as strings, then as numbers when
// both evaluate (integers, decimals, fractions, \frac, \sqrt, \pi, powers,
// products), then element by element when both are tuples or intervals with
// the same brackets. It does no algebra: "x+1" and "1+x" differ.
func MathEquivalent(got, want string) bool {
	g, w := NormalizeMath(got), NormalizeMath(want)
	if g == "" || w == "" {
		return false
	}
	return normalizedEquivalent(g, w, 0)
}

func normalizedEquivalent(g, w string, depth int) bool {
	if g == w {
		return true
	}
	gv, gok := EvalMath(g)
	wv, wok := EvalMath(w)
	if gok && wok {
		return closeEnough(gv, wv)
	}
	if depth > 2 {
		return false
	}
	gl, gparts, gok := splitTuple(g)
	wl, wparts, wok := splitTuple(w)
	if !gok || !wok || gl != wl || len(gparts) != len(wparts) {
		return false
	}
	for i := range gparts {
		if !normalizedEquivalent(gparts[i], wparts[i], depth+1) {
			return false
		}
	}
	return true
}

var (
	thousands   = regexp.MustCompile(`^-?\d{1,3}(,\d{3})+(\.\d+)?$`)
	textCmd     = regexp.MustCompile(`\\(?:text|textbf|textrm|mathrm|mathbf|mbox)\{([^{}]*)\}`)
	fracShort   = regexp.MustCompile(`\\frac(\d)(\d)`)
	fracHalf    = regexp.MustCompile(`\\frac(\d)\{`)
	fracHalf2   = regexp.MustCompile(`\\frac\{([^{}]*)\}(\d)`)
	sqrtShort   = regexp.MustCompile(`\\sqrt(\d+)`)
	leftRight   = regexp.MustCompile(`\\(?:left|right|big|Big|bigg|Bigg)([^A-Za-z]|$)`)
	shortAssign = regexp.MustCompile(`^[A-Za-z]\w?(?:_\{?\w+\}?)?=`)
)

// NormalizeMath rewrites a LaTeX answer into a canonical form: no white space,
// no $, no \left/\right, \dfrac and \tfrac as \frac, \frac12 as \frac{1}{2},
// no degree sign, no percent sign, no spacing commands, \text{..} unwrapped
// (a trailing space-led \text{ unit} dropped), "x=" prefixes dropped, a
// leading "." given its 0, a trailing "." dropped, and "1,234" as "1234".
func NormalizeMath(s string) string {
	s = PyStrip(s)
	s = strings.ReplaceAll(s, "\n", "")
	for _, sp := range []string{`\!`, `\,`, `\;`, `\:`, `\ `, `~`} {
		s = strings.ReplaceAll(s, sp, "")
	}
	s = strings.ReplaceAll(s, `\\`, `\`)
	s = strings.ReplaceAll(s, `\dfrac`, `\frac`)
	s = strings.ReplaceAll(s, `\tfrac`, `\frac`)
	s = leftRight.ReplaceAllString(s, "$1")
	for _, deg := range []string{`^{\circ}`, `^\circ`, `\circ`, `°`, `\$`, `$`, `\%`, `%`} {
		s = strings.ReplaceAll(s, deg, "")
	}
	s = strings.ReplaceAll(s, "{,}", "")
	// A unit written as "5 \text{ cm}" goes; "\text{(A)}" is the answer.
	if i := strings.LastIndex(s, `\text{ `); i > 0 && strings.HasSuffix(s, "}") {
		s = s[:i]
	}
	s = textCmd.ReplaceAllString(s, "$1")
	s = strings.Join(strings.Fields(s), "")
	if loc := shortAssign.FindStringIndex(s); loc != nil && strings.Count(s, "=") == 1 {
		s = s[loc[1]:]
	}
	s = fracShort.ReplaceAllString(s, `\frac{$1}{$2}`)
	s = fracHalf.ReplaceAllString(s, `\frac{$1}{`)
	s = fracHalf2.ReplaceAllString(s, `\frac{$1}{$2}`)
	s = sqrtShort.ReplaceAllString(s, `\sqrt{$1}`)
	s = strings.TrimSuffix(s, ".")
	if strings.HasPrefix(s, ".") {
		s = "0" + s
	}
	s = strings.ReplaceAll(s, "{.", "{0.")
	s = strings.ReplaceAll(s, "-.", "-0.")
	if thousands.MatchString(s) {
		s = strings.ReplaceAll(s, ",", "")
	}
	return s
}

// splitTuple splits "(a,b)" or "[a,b)" or "a,b" at top-level commas and
// returns the brackets as a key, so that (1,2) and [1,2] stay different.
func splitTuple(s string) (brackets string, parts []string, ok bool) {
	if len(s) >= 2 && strings.ContainsRune("([", rune(s[0])) && strings.ContainsRune(")]", rune(s[len(s)-1])) {
		brackets = s[:1] + s[len(s)-1:]
		s = s[1 : len(s)-1]
	}
	depth, last := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[last:i])
				last = i + 1
			}
		}
	}
	parts = append(parts, s[last:])
	return brackets, parts, len(parts) > 1
}
