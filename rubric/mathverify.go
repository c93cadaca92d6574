package rubric

import (
	"math"
	"math/big"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// MathVerify reports whether response is the same answer as answer, as
// verifiers' MathRubric (verifiers 8d4b33247) decides with math-verify
// 0.8.0: both are wrapped in \boxed{}, extracted and normalised
// (NormalizeMath), parsed, and compared by math-verify's rules:
//
//   - equal normalised text always matches;
//   - "x = 5" against 5 compares the right side; equations and
//     inequalities compare lhs - rhs;
//   - tuples compare in order, sets in sorted order, intervals by their
//     ends and openness, an open interval (1, 2) also against the tuple;
//   - when either side is a plain number, a number written with a decimal
//     point makes both sides compare rounded to 6 decimals (0.333333 is
//     1/3, 0.333 is not, 3.14159 is not π), otherwise values must be
//     exactly equal (\frac{36}{2}, 2+16, \sqrt{324} are 18);
//   - other expressions are equal when their difference is zero: exactly
//     for constants (to a relative 1e-12), and for expressions in
//     variables at seeded random points ((x-1)(x+1) is x^2-1).
//
// Where math-verify simplifies with sympy, the random evaluation here
// stands in: at 8 points, each variable drawn from [0.5, 3.5), every
// point where both sides are finite must agree to a relative 1e-9, and at
// least 4 points must be. Percent stays a factor of 1/100 (18\% is not
// 18). An empty response, or one over MathRubric's 50,000 characters,
// never matches; answers over 2,000 bytes are compared as text only
// (maxMathInput), where math-verify would try to parse them for up to 5
// seconds.
func MathVerify(answer, response string) bool {
	if response == "" || len([]rune(response)) > maxVerifyChars {
		return false
	}
	gold := extractMath(`\boxed{` + answer + `}`)
	pred := extractMath(`\boxed{` + response + `}`)
	if gold.text != "" && gold.text == pred.text {
		return true
	}
	return gold.node != nil && pred.node != nil && mathEqual(gold.node, pred.node)
}

// maxVerifyChars is MathRubric.MAX_VERIFY_CHARS.
const maxVerifyChars = 50_000

// MathEquivalent reports whether got is the answer want: MathVerify(want,
// got).
func MathEquivalent(got, want string) bool {
	return MathVerify(want, got)
}

// extracted is what math-verify's parse returns for one text: the parsed
// answer (nil when it did not parse) and the normalised text.
type extracted struct {
	node *mathNode
	text string
}

// extractMath takes the boxed answer out of s, normalises and parses it.
// When the LaTeX does not parse, math-verify falls back to the rightmost
// plain number in the text; so does this.
func extractMath(s string) extracted {
	text := NormalizeMath(extractBoxedContent(s))
	if n, ok := parseMath(text); ok {
		return extracted{n, text}
	}
	if n, ok := lastPlainNumber(s); ok {
		return extracted{n, text}
	}
	return extracted{nil, text}
}

var plainNumber = regexp.MustCompile(`(?:^|\s|=)(-?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?|\.\d+)(\s*%)?`)

func lastPlainNumber(s string) (*mathNode, bool) {
	all := plainNumber.FindAllStringSubmatch(s, -1)
	if len(all) == 0 {
		return nil, false
	}
	m := all[len(all)-1]
	r, ok := new(big.Rat).SetString(strings.ReplaceAll(m[1], ",", ""))
	if !ok {
		return nil, false
	}
	n := &mathNode{kind: mNum, num: r, float: strings.Contains(m[1], ".")}
	if m[2] != "" {
		n = &mathNode{kind: mMul, pct: true, args: []*mathNode{n, numNode(big.NewRat(1, 100))}}
	}
	return n, true
}

// extractBoxedContent is math-verify's extract_boxed_content in "last"
// mode: the content of the last \boxed{} or \fbox{}, and of boxes just
// before it when only a short separator (", ", " and ") lies between,
// joined by commas. An unclosed box yields the rest of the text.
func extractBoxedContent(text string) string {
	var results []string
	cur, maxPos, lastStart := len(text), len(text), -1
	for {
		bi := strings.LastIndex(text[:cur], `\boxed`)
		fi := strings.LastIndex(text[:cur], `\fbox`)
		if bi < 0 && fi < 0 {
			break
		}
		start, cmdEnd := bi, bi+len(`\boxed`)
		if fi > bi {
			start, cmdEnd = fi, fi+len(`\fbox`)
		}
		next := cmdEnd
		for next < maxPos && unicode.IsSpace(rune(text[next])) {
			next++
		}
		if next >= maxPos {
			break
		}
		if text[next] != '{' {
			if len(results) == 0 {
				results = append(results, text[next:])
			}
			break
		}
		end := matchingBrace(text, next, maxPos)
		if end < 0 {
			if len(results) == 0 {
				results = append(results, text[next:])
			}
			break
		}
		content := PyStrip(text[next+1 : end])
		if lastStart >= 0 && !shortSeparator(text[end+1:lastStart], content, results[len(results)-1]) {
			break
		}
		results = append(results, content)
		lastStart, maxPos, cur = start, start, start
	}
	if len(results) == 0 {
		return text
	}
	for i, j := 0, len(results)-1; i < j; i, j = i+1, j-1 {
		results[i], results[j] = results[j], results[i]
	}
	return strings.Join(results, ",")
}

// matchingBrace is the index of the brace closing the one at open, before
// limit, or -1.
func matchingBrace(s string, open, limit int) int {
	depth := 1
	for i := open + 1; i < limit; i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

var separatorWord = regexp.MustCompile(`and|or|,|;`)

// shortSeparator decides whether an earlier box belongs to the answer: the
// text between is under 10 bytes, or under 70 with a separator and a
// different content.
func shortSeparator(between, content, later string) bool {
	if len(between) < 10 {
		return true
	}
	return content != later && len(between) < 70 && separatorWord.MatchString(between)
}

// mathEqual is math-verify's sympy_expr_eq (strict mode) on parsed answers.
func mathEqual(g, p *mathNode) bool {
	gEq, pEq := isEquation(g), isEquation(p)
	switch {
	case pEq && !gEq:
		p = p.args[1]
	case isAssignment(g) && !pEq:
		g = g.args[1]
	}
	if canonical(g) == canonical(p) {
		return true
	}
	switch {
	case g.kind == mRel && p.kind == mRel:
		return relationsEqual(g, p)
	case isSetLike(g) || isSetLike(p):
		return setsEqual(g, p)
	case g.kind == mSym || p.kind == mSym:
		return symbolsEqual(g, p)
	}
	return numericEqual(g, p) || symbolicEqual(g, p)
}

func isEquation(n *mathNode) bool { return n.kind == mRel && n.name == "=" }

// isAssignment is an equation whose left side is made of variables only,
// such as x = 5.
func isAssignment(n *mathNode) bool {
	if !isEquation(n) {
		return false
	}
	l := n.args[0]
	if l.kind == mSym {
		return true
	}
	if l.kind != mMul {
		return false
	}
	for _, a := range l.args {
		if a.kind != mSym {
			return false
		}
	}
	return true
}

func isSetLike(n *mathNode) bool {
	return n.kind == mSet || n.kind == mTuple || n.kind == mInterval
}

var flipped = map[string]string{"<": ">", ">": "<", "<=": ">=", ">=": "<=", "=": "="}

func difference(a, b *mathNode) *mathNode {
	return &mathNode{kind: mAdd, args: []*mathNode{a, neg(b)}}
}

func relationsEqual(g, p *mathNode) bool {
	if g.name == p.name && mathEqual(difference(g.args[0], g.args[1]), difference(p.args[0], p.args[1])) {
		return true
	}
	inv, ok := flipped[g.name]
	return ok && inv == p.name && mathEqual(difference(g.args[0], g.args[1]), difference(p.args[1], p.args[0]))
}

func setsEqual(g, p *mathNode) bool {
	if !isSetLike(g) {
		g = &mathNode{kind: mSet, args: []*mathNode{g}}
	}
	if !isSetLike(p) {
		p = &mathNode{kind: mSet, args: []*mathNode{p}}
	}
	if g.kind == mInterval && p.kind == mInterval {
		return g.lopen == p.lopen && g.ropen == p.ropen && mathEqual(g.args[0], p.args[0]) && mathEqual(g.args[1], p.args[1])
	}
	if canonical(g) == canonical(p) {
		return true
	}
	if g.kind != mInterval && p.kind != mInterval {
		return elementsEqual(g, p)
	}
	// An open interval (a, b) is also the pair (a, b).
	if g.kind == mInterval && g.lopen && g.ropen && len(p.args) == 2 {
		return elementsEqual(&mathNode{kind: mTuple, args: g.args}, p)
	}
	if p.kind == mInterval && p.lopen && p.ropen && len(g.args) == 2 {
		return elementsEqual(g, &mathNode{kind: mTuple, args: p.args})
	}
	return false
}

// elementsEqual compares sets in sorted order and tuples as written; a gold
// tuple against a set takes the set as written.
func elementsEqual(g, p *mathNode) bool {
	if len(g.args) != len(p.args) {
		return false
	}
	ga, pa := g.args, p.args
	switch {
	case g.kind == mSet:
		ga, pa = sortedElements(ga), sortedElements(pa)
	case p.kind == mSet && g.kind != mTuple:
		pa = sortedElements(pa)
	}
	for i := range ga {
		if !mathEqual(ga[i], pa[i]) {
			return false
		}
	}
	return true
}

// sortedElements orders by numeric value where both have one, else by
// their written form, as sympy's default_sort_key of evalf does.
func sortedElements(xs []*mathNode) []*mathNode {
	out := append([]*mathNode(nil), xs...)
	sort.SliceStable(out, func(i, j int) bool {
		vi, oki := evalFloat(unwrapAssignment(out[i]), nil)
		vj, okj := evalFloat(unwrapAssignment(out[j]), nil)
		if oki && okj {
			return vi < vj
		}
		if oki != okj {
			return oki
		}
		return canonical(out[i]) < canonical(out[j])
	})
	return out
}

func unwrapAssignment(n *mathNode) *mathNode {
	if isAssignment(n) {
		return n.args[1]
	}
	return n
}

func symbolsEqual(g, p *mathNode) bool {
	isE := func(n *mathNode) bool { return n.kind == mConst && n.name == "e" }
	if g.kind == mSym && g.name == "e" && isE(p) || p.kind == mSym && p.name == "e" && isE(g) {
		return true
	}
	// A word is read as a product of letters: "ab" matches the symbol ab.
	concat := func(n *mathNode) (string, bool) {
		if n.kind != mMul {
			return "", false
		}
		var b strings.Builder
		for _, a := range n.args {
			switch {
			case a.kind == mSym:
				b.WriteString(a.name)
			case isE(a):
				b.WriteString("e")
			default:
				return "", false
			}
		}
		return b.String(), true
	}
	if g.kind == mSym {
		if s, ok := concat(p); ok {
			return g.name == s
		}
	}
	if p.kind == mSym {
		if s, ok := concat(g); ok {
			return p.name == s
		}
	}
	return g.kind == mSym && p.kind == mSym && g.name == p.name
}

func isNumberAtom(n *mathNode, float bool) bool {
	if n.pct && len(n.args) == 2 {
		n = n.args[0]
	}
	return n.kind == mNum && (!float || n.float)
}

// numericEqual is sympy_numeric_eq: exact values, or values rounded to 6
// decimals when a number was written with a decimal point; for two
// non-numbers, a zero difference.
func numericEqual(g, p *mathNode) bool {
	if isNumberAtom(g, false) || isNumberAtom(p, false) {
		if isNumberAtom(g, true) || isNumberAtom(p, true) {
			return floatEqual(g, p)
		}
		a, ok1 := evalExact(g)
		b, ok2 := evalExact(p)
		return ok1 && ok2 && a.Cmp(b) == 0
	}
	if len(freeSymbols(g, p)) > 0 {
		return false
	}
	if a, ok := evalExact(g); ok {
		if b, ok := evalExact(p); ok {
			return a.Cmp(b) == 0
		}
	}
	a, ok1 := evalFloat(g, nil)
	b, ok2 := evalFloat(p, nil)
	return ok1 && ok2 && closeTo(a, b, 1e-12)
}

// floatEqual compares where a number was written with a decimal point.
// sympy rounds both sides to 6 decimals, but a rounded Float never equals
// an Integer (sympy ≥ 1.13), so against a whole number only an exactly
// equal value counts (18.00 is 18, 10.0000001 is not 10), which is what
// its later simplify(a - b) == 0 finds.
func floatEqual(g, p *mathNode) bool {
	ra, okA := evalExact(g)
	rb, okB := evalExact(p)
	if okA && okB && ra.Cmp(rb) == 0 {
		return true
	}
	if okA && !isNumberAtom(g, true) && ra.IsInt() || okB && !isNumberAtom(p, true) && rb.IsInt() {
		return false
	}
	a, ok1 := evalFloat(g, nil)
	b, ok2 := evalFloat(p, nil)
	return ok1 && ok2 && math.Round(a*1e6) == math.Round(b*1e6)
}

func closeTo(a, b, rel float64) bool {
	return math.Abs(a-b) <= rel*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// symbolicEqual stands in for sympy's simplify(a - b) == 0: the two sides
// agree at seeded random values of their variables.
func symbolicEqual(g, p *mathNode) bool {
	syms := freeSymbols(g, p)
	if len(syms) == 0 {
		return false
	}
	state := uint64(0x9e3779b97f4a7c15)
	next := func() float64 { // xorshift64*: the same points on every run
		state ^= state >> 12
		state ^= state << 25
		state ^= state >> 27
		return float64((state*0x2545f4914f6cdd1d)>>11) / (1 << 53)
	}
	agreed := 0
	for k := 0; k < 8; k++ {
		vars := make(map[string]float64, len(syms))
		for _, s := range syms {
			vars[s] = 0.5 + 3*next()
		}
		a, ok1 := evalFloat(g, vars)
		b, ok2 := evalFloat(p, vars)
		if !ok1 || !ok2 {
			continue
		}
		if !closeTo(a, b, 1e-9) {
			return false
		}
		agreed++
	}
	return agreed >= 4
}
