package rubric

import (
	"math/big"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// mathKind is the kind of a node of a parsed answer.
type mathKind int

const (
	mNum      mathKind = iota // num (Float when written with a decimal point)
	mSym                      // a variable, lower-cased as latex2sympy does
	mConst                    // name: "pi", "e", "inf"
	mAdd                      // sum of args
	mMul                      // product of args
	mPow                      // args[0] ^ args[1]
	mFunc                     // name(args...): sqrt, sin, ln, factorial, ...
	mTuple                    // (a, b, ...)
	mInterval                 // args[0], args[1] with lopen, ropen
	mSet                      // {a, b, ...}
	mRel                      // args[0] rel args[1]; name is "=", "<", "<=", ">", ">=", "!="
)

// mathNode is a parsed answer: a small expression tree, enough for the
// answers math-verify compares (numbers, arithmetic, roots, π, variables,
// tuples, intervals, sets, equations and inequalities).
type mathNode struct {
	kind         mathKind
	num          *big.Rat
	float        bool
	pct          bool // a number or expression followed by %
	name         string
	args         []*mathNode
	lopen, ropen bool
}

func numNode(r *big.Rat) *mathNode { return &mathNode{kind: mNum, num: r} }
func intNode(n int64) *mathNode    { return numNode(big.NewRat(n, 1)) }
func neg(n *mathNode) *mathNode    { return &mathNode{kind: mMul, args: []*mathNode{intNode(-1), n}} }
func inverse(n *mathNode) *mathNode {
	return &mathNode{kind: mPow, args: []*mathNode{n, intNode(-1)}}
}

// maxMathInput bounds what the parser reads: answers are short, and the
// bound keeps recursion and evaluation cheap on adversarial text.
const maxMathInput = 2000

// parseMath parses a normalised answer (see NormalizeMath). It reports
// false for anything outside the grammar, as latex2sympy raises.
func parseMath(s string) (*mathNode, bool) {
	s = PyStrip(s)
	if s == "" || len(s) > maxMathInput {
		return nil, false
	}
	if m := commaNumber.FindStringSubmatch(s); m != nil {
		// "1,234" is a number with thousands separators, not the set {1, 234}.
		r, ok := new(big.Rat).SetString(strings.ReplaceAll(s, ",", ""))
		return &mathNode{kind: mNum, num: r, float: m[2] != ""}, ok
	}
	p := &latexParser{s: s}
	items, ok := p.list()
	p.skipSpace()
	if !ok || p.pos != len(p.s) {
		return nil, false
	}
	if len(items) > 1 {
		return &mathNode{kind: mSet, args: items}, true
	}
	return items[0], true
}

var commaNumber = regexp.MustCompile(`^-?\d{1,3}(,\d{3})+(\.\d+)?$`)

type latexParser struct {
	s     string
	pos   int
	depth int
}

func (p *latexParser) skipSpace() {
	for p.pos < len(p.s) {
		switch {
		case p.s[p.pos] == ' ' || p.s[p.pos] == '\t' || p.s[p.pos] == '\n' || p.s[p.pos] == '\r':
			p.pos++
		case strings.HasPrefix(p.s[p.pos:], `\,`), strings.HasPrefix(p.s[p.pos:], `\;`), strings.HasPrefix(p.s[p.pos:], `\:`), strings.HasPrefix(p.s[p.pos:], `\quad`):
			p.pos += 2
			if strings.HasPrefix(p.s[p.pos-2:], `\quad`) {
				p.pos += 3
			}
		default:
			return
		}
	}
}

// peek reports whether the input continues with tok (after white space).
// A command such as \pi does not match the start of \pid.
func (p *latexParser) peek(tok string) bool {
	p.skipSpace()
	if !strings.HasPrefix(p.s[p.pos:], tok) {
		return false
	}
	if tok[0] == '\\' && isASCIILetter(tok[len(tok)-1]) {
		end := p.pos + len(tok)
		return end == len(p.s) || !isASCIILetter(p.s[end])
	}
	return true
}

func (p *latexParser) eat(tok string) bool {
	if p.peek(tok) {
		p.pos += len(tok)
		return true
	}
	return false
}

func (p *latexParser) enter() bool { p.depth++; return p.depth < 100 }
func (p *latexParser) leave()      { p.depth-- }

// list := relation (',' relation)*
func (p *latexParser) list() ([]*mathNode, bool) {
	var items []*mathNode
	for {
		n, ok := p.relation()
		if !ok {
			return nil, false
		}
		items = append(items, n)
		if !p.eat(",") && !p.eat(";") {
			return items, true
		}
	}
}

var relations = []struct{ tok, name string }{
	{`\leq`, "<="}, {`\geq`, ">="}, {`\le`, "<="}, {`\ge`, ">="}, {`\neq`, "!="}, {`\ne`, "!="},
	{"<=", "<="}, {">=", ">="}, {"!=", "!="}, {"=", "="}, {"<", "<"}, {">", ">"}, {`\lt`, "<"}, {`\gt`, ">"},
}

// relation := expr (rel expr)*; a chain a = b = c keeps its first left side
// and last right side, which is all math-verify compares of it.
func (p *latexParser) relation() (*mathNode, bool) {
	lhs, ok := p.expr()
	if !ok {
		return nil, false
	}
	var rel *mathNode
	for {
		name := ""
		for _, r := range relations {
			if p.eat(r.tok) {
				name = r.name
				break
			}
		}
		if name == "" {
			break
		}
		rhs, ok := p.expr()
		if !ok {
			return nil, false
		}
		if rel == nil {
			rel = &mathNode{kind: mRel, name: name, args: []*mathNode{lhs, rhs}}
		} else {
			rel.args[1] = rhs
		}
	}
	if rel != nil {
		return rel, true
	}
	return lhs, true
}

// expr := ['-'|'+'] term (('+' | '-') term)*
func (p *latexParser) expr() (*mathNode, bool) {
	if !p.enter() {
		return nil, false
	}
	defer p.leave()
	first, ok := p.term()
	if !ok {
		return nil, false
	}
	terms := []*mathNode{first}
	for {
		switch {
		case p.eat("+"):
			t, ok := p.term()
			if !ok {
				return nil, false
			}
			terms = append(terms, t)
		case p.eat("-"):
			t, ok := p.term()
			if !ok {
				return nil, false
			}
			terms = append(terms, neg(t))
		default:
			if len(terms) == 1 {
				return first, true
			}
			return &mathNode{kind: mAdd, args: terms}, true
		}
	}
}

// term := unary (('*' | \cdot | \times | '/' | \div | implicit) unary)*
func (p *latexParser) term() (*mathNode, bool) {
	f, ok := p.unary()
	if !ok {
		return nil, false
	}
	factors := []*mathNode{f}
	for {
		var next *mathNode
		switch {
		case p.eat("*"), p.eat(`\cdot`), p.eat(`\times`):
			next, ok = p.unary()
		case p.eat("/"), p.eat(`\div`):
			next, ok = p.unary()
			if ok {
				next = inverse(next)
			}
		case p.startsFactor():
			next, ok = p.postfix()
		default:
			if len(factors) == 1 {
				return f, true
			}
			return &mathNode{kind: mMul, args: factors}, true
		}
		if !ok {
			return nil, false
		}
		factors = append(factors, next)
	}
}

// startsFactor reports whether an implicit product continues here: 2x,
// 3\pi, (x-1)(x+1), 2\sqrt{2}.
func (p *latexParser) startsFactor() bool {
	p.skipSpace()
	if p.pos >= len(p.s) {
		return false
	}
	c := p.s[p.pos]
	switch {
	case c >= '0' && c <= '9', c == '.', isASCIILetter(c), c == '(', c == '{':
		return true
	case c == '\\':
		for _, rel := range relations {
			if p.peek(rel.tok) {
				return false
			}
		}
		for _, op := range []string{`\cdot`, `\times`, `\div`, `\right`, `\}`, `\%`, `\pm`} {
			if p.peek(op) {
				return false
			}
		}
		return true
	}
	return false
}

// unary := ('-' | '+') unary | postfix
func (p *latexParser) unary() (*mathNode, bool) {
	if !p.enter() {
		return nil, false
	}
	defer p.leave()
	if p.eat("-") {
		n, ok := p.unary()
		if !ok {
			return nil, false
		}
		return neg(n), true
	}
	if p.eat("+") {
		return p.unary()
	}
	return p.postfix()
}

// postfix := primary ('^' exponent | '!' | '%')*
func (p *latexParser) postfix() (*mathNode, bool) {
	n, ok := p.primary()
	if !ok {
		return nil, false
	}
	for {
		switch {
		case p.eat("^"):
			var e *mathNode
			p.skipSpace()
			if p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
				// A LaTeX exponent without braces is one character.
				e = intNode(int64(p.s[p.pos] - '0'))
				p.pos++
			} else if e, ok = p.primary(); !ok {
				return nil, false
			}
			if e.kind == mConst && e.name == "circ" {
				continue // degrees: 90^\circ is 90
			}
			if n.kind == mConst && n.name == "e" {
				n = &mathNode{kind: mFunc, name: "exp", args: []*mathNode{e}}
				continue
			}
			n = &mathNode{kind: mPow, args: []*mathNode{n, e}}
		case p.eat("!"):
			n = &mathNode{kind: mFunc, name: "factorial", args: []*mathNode{n}}
		case p.eat(`\%`), p.eat("%"):
			n = &mathNode{kind: mMul, pct: true, args: []*mathNode{n, numNode(big.NewRat(1, 100))}}
		default:
			return n, true
		}
	}
}

// greek letters and other named symbols become variables of that name.
var namedSymbols = map[string]bool{}

func init() {
	for _, g := range strings.Fields(`alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi rho sigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Sigma Upsilon Phi Psi Omega`) {
		namedSymbols[g] = true
	}
}

var functions = map[string]bool{"sin": true, "cos": true, "tan": true, "ln": true, "log": true, "exp": true, "sec": true, "csc": true, "cot": true, "arcsin": true, "arccos": true, "arctan": true}

func (p *latexParser) primary() (*mathNode, bool) {
	if !p.enter() {
		return nil, false
	}
	defer p.leave()
	p.skipSpace()
	if p.pos >= len(p.s) {
		return nil, false
	}
	c := p.s[p.pos]
	switch {
	case c >= '0' && c <= '9' || c == '.':
		return p.number()
	case c == '{':
		p.pos++
		n, ok := p.expr()
		if !ok || !p.eat("}") {
			return nil, false
		}
		return n, true
	case c == '(' || c == '[':
		return p.bracketed()
	case c == '|':
		p.pos++
		n, ok := p.expr()
		if !ok || !p.eat("|") {
			return nil, false
		}
		return &mathNode{kind: mFunc, name: "abs", args: []*mathNode{n}}, true
	case isASCIILetter(c):
		// Each letter is a variable (ab is a·b), lower-cased as
		// latex2sympy does; a subscript joins the name (x_1).
		p.pos++
		name := strings.ToLower(string(c))
		if p.eat("_") {
			sub, ok := p.subscript()
			if !ok {
				return nil, false
			}
			return &mathNode{kind: mSym, name: name + "_" + sub}, true
		}
		if name == "e" {
			return &mathNode{kind: mConst, name: "e"}, true
		}
		return &mathNode{kind: mSym, name: name}, true
	case c == '\\':
		return p.command()
	}
	return nil, false
}

func (p *latexParser) subscript() (string, bool) {
	if p.eat("{") {
		end := strings.IndexByte(p.s[p.pos:], '}')
		if end < 0 {
			return "", false
		}
		sub := p.s[p.pos : p.pos+end]
		p.pos += end + 1
		return strings.ToLower(sub), sub != ""
	}
	if p.pos < len(p.s) && (isASCIILetter(p.s[p.pos]) || p.s[p.pos] >= '0' && p.s[p.pos] <= '9') {
		p.pos++
		return strings.ToLower(p.s[p.pos-1 : p.pos]), true
	}
	return "", false
}

// number := digits ['.' digits]; an integer right before \frac{n}{d} of
// integers is a mixed number, as math-verify reads 2\frac{1}{2} = 5/2.
func (p *latexParser) number() (*mathNode, bool) {
	start := p.pos
	for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
		p.pos++
	}
	isFloat := false
	if p.pos < len(p.s) && p.s[p.pos] == '.' && p.pos+1 < len(p.s) && p.s[p.pos+1] >= '0' && p.s[p.pos+1] <= '9' {
		isFloat = true
		p.pos++
		for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
			p.pos++
		}
	}
	if p.pos == start || p.pos-start > 200 {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(p.s[start:p.pos])
	if !ok {
		return nil, false
	}
	n := &mathNode{kind: mNum, num: r, float: isFloat}
	if !isFloat {
		save := p.pos
		if f, ok := p.mixedFraction(); ok {
			return &mathNode{kind: mNum, num: new(big.Rat).Add(r, f)}, true
		}
		p.pos = save
	}
	return n, true
}

var mixedFrac = regexp.MustCompile(`^\\frac\{(\d+)\}\{(\d+)\}`)

func (p *latexParser) mixedFraction() (*big.Rat, bool) {
	m := mixedFrac.FindStringSubmatch(p.s[p.pos:])
	if m == nil {
		return nil, false
	}
	num, _ := new(big.Int).SetString(m[1], 10)
	den, _ := new(big.Int).SetString(m[2], 10)
	if den.Sign() == 0 {
		return nil, false
	}
	p.pos += len(m[0])
	return new(big.Rat).SetFrac(num, den), true
}

// bracketed := '(' list ')' | '[' list ']' | '(' a ',' b ']' | '[' a ',' b ')'.
// One element is grouping; two are an interval when the left end is
// below the right one (or either is symbolic), else a tuple; more are a
// tuple.
func (p *latexParser) bracketed() (*mathNode, bool) {
	open := p.s[p.pos]
	p.pos++
	items, ok := p.list()
	if !ok {
		return nil, false
	}
	p.skipSpace()
	if p.pos >= len(p.s) || (p.s[p.pos] != ')' && p.s[p.pos] != ']') {
		return nil, false
	}
	closing := p.s[p.pos]
	p.pos++
	if len(items) == 1 {
		if open == '(' && closing == ')' || open == '[' && closing == ']' {
			return items[0], true
		}
		return nil, false
	}
	if len(items) == 2 {
		iv := &mathNode{kind: mInterval, args: items, lopen: open == '(', ropen: closing == ')'}
		if lo, ok1 := evalFloat(items[0], nil); ok1 {
			if hi, ok2 := evalFloat(items[1], nil); ok2 && lo >= hi {
				if open == '(' && closing == ')' {
					return &mathNode{kind: mTuple, args: items}, true
				}
				return emptyOrPoint(iv, lo == hi), true
			}
		}
		return iv, true
	}
	if open == '(' && closing == ')' || open == '[' && closing == ']' {
		return &mathNode{kind: mTuple, args: items}, true
	}
	return nil, false
}

// emptyOrPoint is what sympy makes of an interval whose ends meet or cross:
// [a, a] is {a}, anything else empty.
func emptyOrPoint(iv *mathNode, equal bool) *mathNode {
	if equal && !iv.lopen && !iv.ropen {
		return &mathNode{kind: mSet, args: iv.args[:1]}
	}
	return &mathNode{kind: mSet}
}

func (p *latexParser) command() (*mathNode, bool) {
	switch {
	case p.eat(`\frac`):
		n, ok1 := p.group()
		d, ok2 := p.group()
		if !ok1 || !ok2 {
			return nil, false
		}
		if n.kind == mNum && d.kind == mNum && !n.float && !d.float && d.num.Sign() != 0 {
			return numNode(new(big.Rat).Quo(n.num, d.num)), true
		}
		return &mathNode{kind: mMul, args: []*mathNode{n, inverse(d)}}, true
	case p.eat(`\sqrt`):
		var index *mathNode
		if p.eat("[") {
			var ok bool
			if index, ok = p.expr(); !ok || !p.eat("]") {
				return nil, false
			}
		}
		arg, ok := p.group()
		if !ok {
			return nil, false
		}
		if index == nil {
			return &mathNode{kind: mFunc, name: "sqrt", args: []*mathNode{arg}}, true
		}
		return &mathNode{kind: mPow, args: []*mathNode{arg, inverse(index)}}, true
	case p.eat(`\pi`):
		return &mathNode{kind: mConst, name: "pi"}, true
	case p.eat(`\infty`):
		return &mathNode{kind: mConst, name: "inf"}, true
	case p.eat(`\circ`):
		return &mathNode{kind: mConst, name: "circ"}, true
	case p.eat(`\{`):
		items, ok := p.list()
		if !ok || !p.eat(`\}`) {
			return nil, false
		}
		return &mathNode{kind: mSet, args: items}, true
	case p.eat(`\text`):
		return p.text()
	}
	p.pos++
	start := p.pos
	for p.pos < len(p.s) && isASCIILetter(p.s[p.pos]) {
		p.pos++
	}
	name := p.s[start:p.pos]
	switch {
	case namedSymbols[name]:
		return &mathNode{kind: mSym, name: strings.ToLower(name)}, true
	case functions[name]:
		arg, ok := p.postfix()
		if !ok {
			return nil, false
		}
		return &mathNode{kind: mFunc, name: name, args: []*mathNode{arg}}, true
	}
	return nil, false
}

// group := '{' expr '}' | one digit or letter (as in \frac12 before
// normalisation).
func (p *latexParser) group() (*mathNode, bool) {
	if p.eat("{") {
		n, ok := p.expr()
		if !ok || !p.eat("}") {
			return nil, false
		}
		return n, true
	}
	return nil, false
}

// text reads \text{...}: its words are a variable named by their letters,
// lower-cased, as latex2sympy turns \text{(A)} into the symbol a.
func (p *latexParser) text() (*mathNode, bool) {
	if !p.eat("{") {
		return nil, false
	}
	end := strings.IndexByte(p.s[p.pos:], '}')
	if end < 0 {
		return nil, false
	}
	body := p.s[p.pos : p.pos+end]
	p.pos += end + 1
	var name strings.Builder
	for _, r := range body {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			name.WriteRune(unicode.ToLower(r))
		}
	}
	if name.Len() == 0 || !utf8.ValidString(body) {
		return nil, false
	}
	return &mathNode{kind: mSym, name: name.String()}, true
}
