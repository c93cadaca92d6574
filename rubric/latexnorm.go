package rubric

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// NormalizeMath rewrites a LaTeX answer the way math-verify 0.8.0 does before
// parsing it (latex2sympy2_extended 1.10.2's normalize_latex with the
// basic_latex, units, malformed_operators and nits groups, which is what
// verifiers' MathRubric gets): \left/\right, $, \!, quotes and
// \displaystyle go; \dfrac and \tfrac become \frac, \mathrm and \textbf
// become \text; "and"/"or" become commas; percent words become \%; a
// trailing \text{...} (a unit) is dropped, and so is a trailing plain unit
// word from math-verify's list after a number ("5 cm", not "18 dollars");
// \frac12, \sqrt3 and 2/3 get their braces; a leading "." gets its 0, and
// 0.5 becomes \frac{1}{2}. The result is trimmed.
func NormalizeMath(s string) string {
	s = basicLatex(s)
	s = dropUnits(s)
	if strings.HasPrefix(s, ".") {
		s = "0" + s
	}
	if s == "0.5" {
		s = `\frac{1}{2}`
	}
	s = fixMalformedOperators(s)
	return PyStrip(s)
}

var (
	leftCmd      = regexp.MustCompile(`\\m?left(\\\{|\{|\\\||\||\[|\(|\\lbrace|\\lbrack|\\vert|\\lvert|\\lceil|\\lfloor|\\langle)`)
	rightCmd     = regexp.MustCompile(`\\m?right(\\\}|\}|\\\||\||\]|\)|\\rbrace|\\rbrack|\\vert|\\rvert|\\rceil|\\rfloor|\\rangle)`)
	removedCmds  = regexp.MustCompile(`\\mathrm\{th\}|\\!\s*|\\text\s*\{\s*\}|\\\$|\$|\\displaystyle`)
	mathFont     = regexp.MustCompile(`\\math(?:rm|it|bf)|\\text(?:normal|bf|it|rm)`)
	fracVariant  = regexp.MustCompile(`\\[dtc]frac`)
	spaceDot     = regexp.MustCompile(`\s\.`)
	braceComma   = regexp.MustCompile(`\s*\{\s*,\s*\}`)
	andOrText    = regexp.MustCompile(`,?\s*\\text\{\s*(?:and|or)\s*\}`)
	ldots        = regexp.MustCompile(`,?\\ldots`)
	percentWord  = regexp.MustCompile(`\\text\{(?:percentage|percent|pct)\}|\s*(?:percentage|percent|pct)`)
	slashLetter  = regexp.MustCompile(`\\\\([a-zA-Z])`)
	unitTextTail = regexp.MustCompile(`(\^\d|\{\^\d\})$`)
)

// basicLatex is normalize_latex's basic_latex group. Python's version is
// one regular expression with look-behinds; the replacements here run one
// after another, which differs only where two of them overlap.
func basicLatex(s string) string {
	s = strings.NewReplacer(`\mathrm{T}`, "T", `\mathrm{d}`, "d", `{\rm d}`, "d").Replace(s)
	s = leftCmd.ReplaceAllString(s, "$1")
	s = rightCmd.ReplaceAllString(s, "$1")
	s = removedCmds.ReplaceAllString(s, "")
	s = removeUnescapedQuotes(s)
	s = mathFont.ReplaceAllString(s, `\text`)
	s = fracVariant.ReplaceAllString(s, `\frac`)
	s = spaceDot.ReplaceAllString(s, " 0.")
	s = strings.ReplaceAll(s, "{.", "{0.")
	s = braceComma.ReplaceAllString(s, ",")
	s = andOrText.ReplaceAllString(s, ",")
	s = replaceAndOr(s)
	s = replaceBackslashSpace(s)
	s = ldots.ReplaceAllString(s, " ")
	s = percentWord.ReplaceAllString(s, `\%`)
	s = replaceInf(s)
	s = strings.ReplaceAll(s, " sqrt", `\sqrt`)
	s = strings.NewReplacer("\n", " ", "\t", " ").Replace(s)
	if !strings.Contains(s, "matrix") {
		s = slashLetter.ReplaceAllString(s, `\$1`)
	}
	return s
}

func removeUnescapedQuotes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if (s[i] == '"' || s[i] == '\'') && (i == 0 || s[i-1] != '\\') {
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// replaceAndOr turns a standalone "and" or "or" (with an optional comma and
// spaces before it) into a comma: "1 and 2" is the list 1, 2.
func replaceAndOr(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		if s[j] == ',' {
			j++
		}
		for j < len(s) && unicode.IsSpace(rune(s[j])) {
			j++
		}
		for _, w := range []string{"and", "or"} {
			if strings.HasPrefix(s[j:], w) && (i == 0 || !isASCIILetter(s[i-1])) && (j+len(w) == len(s) || !isASCIILetter(s[j+len(w)])) {
				b.WriteByte(',')
				i = j + len(w)
				goto next
			}
		}
		b.WriteByte(s[i])
		i++
	next:
	}
	return b.String()
}

// replaceBackslashSpace turns "\ " (a LaTeX space) into a space, but not the
// second half of "\\ ".
func replaceBackslashSpace(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && unicode.IsSpace(rune(s[i+1])) && (i == 0 || s[i-1] != '\\') {
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// replaceInf writes "infinity" and a bare "inf" as \infty.
func replaceInf(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "infinity"):
			b.WriteString(`\infty`)
			i += len("infinity")
		case strings.HasPrefix(s[i:], "inf") && (i == 0 || s[i-1] != '\\'):
			b.WriteString(`\infty`)
			i += len("inf")
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

// dropUnits is normalize_latex's units group: a trailing \text{...} goes,
// then (twice) a trailing unit word after a digit, brace or space.
func dropUnits(s string) string {
	if t := dropTrailingText(s); t != "" && t != s {
		s = t
	}
	for k := 0; k < 2; k++ {
		if t := dropUnitWord(s); t != "" && t != s {
			s = t
		}
	}
	return s
}

// dropTrailingText removes everything from the first \text{ or \mbox{ when
// the string ends in "}" (optionally followed by ^digit), as the regular
// expression (\\(?:text|mbox){.*?})(\^\d|\{\^\d\})?$ does.
func dropTrailingText(s string) string {
	first := -1
	for _, cmd := range []string{`\text{`, `\mbox{`} {
		if i := strings.Index(s, cmd); i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	if first < 0 {
		return s
	}
	body := unitTextTail.ReplaceAllString(s, "")
	if len(body) <= first+len(`\text{`) || !strings.HasSuffix(body, "}") {
		return s
	}
	return PyStrip(s[:first])
}

// mathUnits are math-verify's unit words (each also with "s" or "es").
var mathUnits = map[string]bool{}

func init() {
	for _, u := range strings.Split("integerpoint|feet|sue|digit|pound|meal|edge|student|children ticket|multiple|east|degree|mph|kmph|ft|m square| m east|sq m|deg|mile|q .|monkey|prime|ratio|profit of rs|rd|o|gm|p . m|lb|tile|per|dm|lt|gain|ab|way|west|a .|b .|c .|d .|e .|f .|g .|h .|t|h|no change|men|soldier|pie|bc|excess|st|inches|noon|cent|by|gal|kmh|c|acre|rise|a . m|th|π r 2|sq|mark|l|toy|coin|sq . m|gallon|° f|profit|minw|yr|women|am|pm|hr|cu cm|square|v â € ™|are|rupee|rounds|cubic|cc|mtr|s|ohm|number|day|hour|minute|min|second|man|woman|sec|cube|mt|sq inch|mp|∏ cm ³|hectare|more|unit|cu . m|cm 2|rs .|rs|kg|g|month|km|m|cm|mm|apple|liter|loss|yard|pure|year|increase|decrease|d|less|Surface|litre|pi sq m|s .|metre|meter|inch", "|") {
		mathUnits[u] = true
	}
}

func isUnit(w string) bool {
	if mathUnits[w] {
		return true
	}
	for _, suf := range []string{"s", "es"} {
		if t, ok := strings.CutSuffix(w, suf); ok && mathUnits[t] {
			return true
		}
	}
	return false
}

// dropUnitWord removes a unit word at the end that follows a digit, "}" or
// white space, keeping that character: "5 cm" → "5", "3t" → "3". The
// leftmost such position wins, as in the regular expression.
func dropUnitWord(s string) string {
	tail := strings.TrimRightFunc(s, unicode.IsSpace)
	// next[i] is the first non-space byte at or after i: the unit after a
	// separator starts there. Computing it once keeps this linear.
	next := make([]int, len(s)+1)
	next[len(s)] = len(s)
	for i := len(s) - 1; i >= 0; i-- {
		next[i] = i
		if unicode.IsSpace(rune(s[i])) {
			next[i] = next[i+1]
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c == '}' || unicode.IsSpace(rune(c))) {
			continue
		}
		j := next[i+1]
		// No unit is longer than 32 bytes.
		if j < len(tail) && len(tail)-j <= 32 && isUnit(tail[j:]) {
			return s[:i+1]
		}
	}
	return s
}

var (
	caretParen  = regexp.MustCompile(`\^\s?\((.*?)\)`)
	sqrtParen   = regexp.MustCompile(`sqrt\s?\((.*?)\)`)
	fracDigits  = regexp.MustCompile(`\\frac\s?(\d)\s?(\d+)`)
	fracBraceD  = regexp.MustCompile(`\\frac\s?\{(.*?)\}\s?(\d)`)
	fracDBrace  = regexp.MustCompile(`\\frac\s?(\d)\s?\{(.*?)\}`)
	sqrtDigit   = regexp.MustCompile(`\\sqrt\s?(\d)`)
	intSlashInt = regexp.MustCompile(`^(-?\d+)/(-?\d+)$`)
)

// fixMalformedOperators is the malformed_operators group: x^(2) → x^{2},
// sqrt(2) → \sqrt{2}, \frac12 → \frac{1}{2}, \sqrt3 → \sqrt{3}, 2/3 →
// \frac{2}{3}.
func fixMalformedOperators(s string) string {
	s = caretParen.ReplaceAllString(s, `^{$1}`)
	s = sqrtParen.ReplaceAllString(s, `\sqrt{$1}`)
	s = fracDigits.ReplaceAllString(s, `\frac{$1}{$2}`)
	s = fracBraceD.ReplaceAllString(s, `\frac{$1}{$2}`)
	s = fracDBrace.ReplaceAllString(s, `\frac{$1}{$2}`)
	s = sqrtDigit.ReplaceAllString(s, `\sqrt{$1}`)
	s = strings.ReplaceAll(s, " sqrt", `\sqrt`)
	s = fixSqrtArg(s)
	if m := intSlashInt.FindStringSubmatch(s); m != nil && !strings.HasPrefix(m[2], "-") {
		s = `\frac{` + m[1] + "}{" + m[2] + "}"
	}
	return s
}

// fixSqrtArg braces a one-character \sqrt argument: \sqrt x → \sqrt{x}.
func fixSqrtArg(s string) string {
	parts := strings.Split(s, `\sqrt`)
	var b strings.Builder
	b.WriteString(parts[0])
	for _, p := range parts[1:] {
		p = strings.TrimLeftFunc(p, unicode.IsSpace)
		b.WriteString(`\sqrt`)
		if p != "" && p[0] != '{' && p[0] != '[' {
			_, n := utf8.DecodeRuneInString(p)
			b.WriteString("{" + p[:n] + "}" + p[n:])
		} else {
			b.WriteString(p)
		}
	}
	return b.String()
}
