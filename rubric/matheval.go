package rubric

import (
	"math"
	"strconv"
	"strings"
)

// EvalMath evaluates a normalised LaTeX arithmetic expression: decimal
// numbers, + - * / ^, \cdot \times \div, parentheses and braces, \frac{a}{b},
// \sqrt{x}, \pi, and implicit products such as 2\sqrt{3} or 3\pi. Anything
// else (variables, functions, units, mixed numbers like 2\frac{1}{2}, whose
// meaning is ambiguous) makes it report false.
func EvalMath(s string) (float64, bool) {
	p := &mathParser{s: s}
	v, ok := p.expr()
	if !ok || p.pos != len(p.s) || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// mathParser is a recursive-descent parser over the string.
type mathParser struct {
	s   string
	pos int
}

func (p *mathParser) peek(prefix string) bool { return strings.HasPrefix(p.s[p.pos:], prefix) }

func (p *mathParser) eat(prefix string) bool {
	if p.peek(prefix) {
		p.pos += len(prefix)
		return true
	}
	return false
}

// expr := term (('+' | '-') term)*
func (p *mathParser) expr() (float64, bool) {
	v, ok := p.term()
	for ok {
		switch {
		case p.eat("+"):
			var w float64
			w, ok = p.term()
			v += w
		case p.eat("-"):
			var w float64
			w, ok = p.term()
			v -= w
		default:
			return v, true
		}
	}
	return 0, false
}

// term := unary (('*' | '/' | \cdot | \times | \div | implicit) unary)*
func (p *mathParser) term() (float64, bool) {
	v, ok := p.unary()
	for ok {
		switch {
		case p.eat("*"), p.eat(`\cdot`), p.eat(`\times`):
			var w float64
			w, ok = p.unary()
			v *= w
		case p.eat("/"), p.eat(`\div`):
			var w float64
			w, ok = p.unary()
			if w == 0 {
				return 0, false
			}
			v /= w
		case p.peek(`\sqrt`), p.peek(`\pi`), p.peek("("):
			// Implicit product: 2\sqrt{3}, 3\pi, 2(x). A number before
			// \frac is excluded on purpose (mixed number or product?).
			var w float64
			w, ok = p.power()
			v *= w
		default:
			return v, true
		}
	}
	return 0, false
}

// unary := ('-' | '+') unary | power
func (p *mathParser) unary() (float64, bool) {
	if p.eat("-") {
		v, ok := p.unary()
		return -v, ok
	}
	if p.eat("+") {
		return p.unary()
	}
	return p.power()
}

// power := primary ('^' exponent)?, where a LaTeX exponent without braces is
// one character: 2^10 is 2^1 followed by 0, which then fails to parse.
func (p *mathParser) power() (float64, bool) {
	base, ok := p.primary()
	if !ok || !p.eat("^") {
		return base, ok
	}
	var exp float64
	if p.peek("{") {
		exp, ok = p.group()
	} else if p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
		exp = float64(p.s[p.pos] - '0')
		p.pos++
	} else {
		ok = false
	}
	if !ok {
		return 0, false
	}
	return math.Pow(base, exp), true
}

// group := '{' expr '}'
func (p *mathParser) group() (float64, bool) {
	if !p.eat("{") {
		return 0, false
	}
	v, ok := p.expr()
	if !ok || !p.eat("}") {
		return 0, false
	}
	return v, true
}

func (p *mathParser) primary() (float64, bool) {
	switch {
	case p.peek("{"):
		return p.group()
	case p.eat("("):
		v, ok := p.expr()
		if !ok || !p.eat(")") {
			return 0, false
		}
		return v, true
	case p.eat(`\frac`):
		n, ok1 := p.group()
		d, ok2 := p.group()
		if !ok1 || !ok2 || d == 0 {
			return 0, false
		}
		return n / d, true
	case p.eat(`\sqrt`):
		v, ok := p.group()
		if !ok || v < 0 {
			return 0, false
		}
		return math.Sqrt(v), true
	case p.eat(`\pi`):
		return math.Pi, true
	}
	start := p.pos
	for p.pos < len(p.s) && (p.s[p.pos] >= '0' && p.s[p.pos] <= '9' || p.s[p.pos] == '.') {
		p.pos++
	}
	if p.pos == start {
		return 0, false
	}
	v, err := strconv.ParseFloat(p.s[start:p.pos], 64)
	return v, err == nil
}
