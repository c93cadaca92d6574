package rubric

import (
	"math"
	"math/big"
	"sort"
	"strings"
)

// evalExact evaluates n exactly when its value is rational: numbers, sums,
// products, integer powers, and roots of perfect powers (\sqrt{324} is 18,
// \sqrt[3]{8} is 2), as sympy evaluates them on construction.
func evalExact(n *mathNode) (*big.Rat, bool) {
	switch n.kind {
	case mNum:
		return n.num, true
	case mAdd, mMul:
		acc := big.NewRat(0, 1)
		if n.kind == mMul {
			acc.SetInt64(1)
		}
		for _, a := range n.args {
			v, ok := evalExact(a)
			if !ok {
				return nil, false
			}
			if n.kind == mAdd {
				acc = new(big.Rat).Add(acc, v)
			} else {
				acc = new(big.Rat).Mul(acc, v)
			}
		}
		return acc, true
	case mPow:
		base, ok1 := evalExact(n.args[0])
		exp, ok2 := evalExact(n.args[1])
		if !ok1 || !ok2 {
			return nil, false
		}
		return ratPow(base, exp)
	case mFunc:
		if n.name == "factorial" {
			v, ok := evalExact(n.args[0])
			if !ok || !v.IsInt() || v.Sign() < 0 || v.Num().Cmp(big.NewInt(300)) > 0 {
				return nil, false
			}
			return new(big.Rat).SetInt(new(big.Int).MulRange(1, v.Num().Int64())), true
		}
		if n.name == "sqrt" {
			v, ok := evalExact(n.args[0])
			if !ok {
				return nil, false
			}
			return ratPow(v, big.NewRat(1, 2))
		}
	}
	return nil, false
}

// ratPow is base^(p/q) when it is rational. Exponents and results are kept
// small so that no answer text can make it run long.
func ratPow(base, exp *big.Rat) (*big.Rat, bool) {
	if !exp.Num().IsInt64() || !exp.Denom().IsInt64() {
		return nil, false
	}
	p, q := exp.Num().Int64(), exp.Denom().Int64()
	if p > 1000 || p < -1000 || q > 64 {
		return nil, false
	}
	if base.Sign() == 0 {
		if p <= 0 {
			return nil, false
		}
		return new(big.Rat), true
	}
	if base.Sign() < 0 && q != 1 {
		return nil, false
	}
	num, den := new(big.Int).Abs(base.Num()), new(big.Int).Set(base.Denom())
	if q != 1 {
		var ok1, ok2 bool
		if num, ok1 = intRoot(num, q); !ok1 {
			return nil, false
		}
		if den, ok2 = intRoot(den, q); !ok2 {
			return nil, false
		}
	}
	if base.Sign() < 0 {
		num.Neg(num)
	}
	if (num.BitLen()+den.BitLen())*int(max(p, -p)) > 1<<16 {
		return nil, false
	}
	abs := big.NewInt(max(p, -p))
	r := new(big.Rat).SetFrac(new(big.Int).Exp(num, abs, nil), new(big.Int).Exp(den, abs, nil))
	if p < 0 {
		r.Inv(r)
	}
	return r, true
}

// intRoot is the exact q-th root of x ≥ 0, if x is a perfect q-th power.
func intRoot(x *big.Int, q int64) (*big.Int, bool) {
	if x.BitLen() > 4096 {
		return nil, false
	}
	f, _ := new(big.Float).SetInt(x).Float64()
	guess := math.Round(math.Pow(f, 1/float64(q)))
	if math.IsInf(guess, 0) || math.IsNaN(guess) {
		return nil, false
	}
	for _, d := range []float64{0, -1, 1} {
		g, _ := big.NewFloat(guess + d).Int(nil)
		if g.Sign() >= 0 && new(big.Int).Exp(g, big.NewInt(q), nil).Cmp(x) == 0 {
			return g, true
		}
	}
	return nil, false
}

// evalFloat evaluates n in float64 with the given values of its variables;
// false when a variable has no value, a function is outside its domain or
// the result is not finite.
func evalFloat(n *mathNode, vars map[string]float64) (float64, bool) {
	v, ok := evalFloatRaw(n, vars)
	return v, ok && !math.IsNaN(v) && !math.IsInf(v, 0)
}

func evalFloatRaw(n *mathNode, vars map[string]float64) (float64, bool) {
	switch n.kind {
	case mNum:
		f, _ := n.num.Float64()
		return f, true
	case mSym:
		v, ok := vars[n.name]
		return v, ok
	case mConst:
		switch n.name {
		case "pi":
			return math.Pi, true
		case "e":
			return math.E, true
		}
		return 0, false
	case mAdd, mMul:
		acc := 0.0
		if n.kind == mMul {
			acc = 1
		}
		for _, a := range n.args {
			v, ok := evalFloatRaw(a, vars)
			if !ok {
				return 0, false
			}
			if n.kind == mAdd {
				acc += v
			} else {
				acc *= v
			}
		}
		return acc, true
	case mPow:
		b, ok1 := evalFloatRaw(n.args[0], vars)
		e, ok2 := evalFloatRaw(n.args[1], vars)
		if !ok1 || !ok2 || (b == 0 && e <= 0) {
			return 0, false
		}
		if b < 0 && e != math.Trunc(e) {
			// Odd roots of negatives are real: \sqrt[3]{-8} is -2.
			if inv := 1 / e; math.Abs(inv-math.Round(inv)) < 1e-12 && int64(math.Round(inv))%2 != 0 {
				return -math.Pow(-b, e), true
			}
			return 0, false
		}
		return math.Pow(b, e), true
	case mFunc:
		if len(n.args) != 1 {
			return 0, false
		}
		x, ok := evalFloatRaw(n.args[0], vars)
		if !ok {
			return 0, false
		}
		return applyFunc(n.name, x)
	}
	return 0, false
}

func applyFunc(name string, x float64) (float64, bool) {
	switch name {
	case "sqrt":
		return math.Sqrt(x), x >= 0
	case "abs":
		return math.Abs(x), true
	case "sin":
		return math.Sin(x), true
	case "cos":
		return math.Cos(x), true
	case "tan":
		return math.Tan(x), true
	case "sec":
		return 1 / math.Cos(x), true
	case "csc":
		return 1 / math.Sin(x), true
	case "cot":
		return 1 / math.Tan(x), true
	case "arcsin":
		return math.Asin(x), x >= -1 && x <= 1
	case "arccos":
		return math.Acos(x), x >= -1 && x <= 1
	case "arctan":
		return math.Atan(x), true
	case "ln", "log":
		// sympy's log is the natural logarithm, and latex2sympy reads
		// \log without a base as it.
		return math.Log(x), x > 0
	case "exp":
		return math.Exp(x), true
	case "factorial":
		if x < 0 || x != math.Trunc(x) || x > 170 {
			return 0, false
		}
		g, _ := math.Lgamma(x + 1)
		return math.Round(math.Exp(g)), true
	}
	return 0, false
}

// freeSymbols lists the variables of n, sorted.
func freeSymbols(ns ...*mathNode) []string {
	seen := map[string]bool{}
	var walk func(*mathNode)
	walk = func(n *mathNode) {
		if n.kind == mSym {
			seen[n.name] = true
		}
		for _, a := range n.args {
			walk(a)
		}
	}
	for _, n := range ns {
		walk(n)
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// canonical writes n so that equal trees, and only they, print alike; it
// plays the part of sympy's structural ==.
func canonical(n *mathNode) string {
	var b strings.Builder
	var walk func(*mathNode)
	walk = func(n *mathNode) {
		switch n.kind {
		case mNum:
			b.WriteString(n.num.RatString())
			if n.float {
				b.WriteString("f")
			}
			return
		case mSym, mConst:
			b.WriteString(n.name)
			return
		}
		b.WriteString([]string{"", "", "", "add", "mul", "pow", "fn", "tuple", "iv", "set", "rel"}[n.kind])
		b.WriteString(n.name)
		if n.kind == mInterval {
			b.WriteString(map[bool]string{true: "(", false: "["}[n.lopen])
			b.WriteString(map[bool]string{true: ")", false: "]"}[n.ropen])
		}
		b.WriteByte('(')
		for i, a := range n.args {
			if i > 0 {
				b.WriteByte(',')
			}
			walk(a)
		}
		b.WriteByte(')')
	}
	walk(n)
	return b.String()
}

// EvalMath evaluates a LaTeX arithmetic expression to a number: decimal
// numbers, + - * / ^, \cdot \times \div, parentheses and braces, \frac,
// \sqrt, \pi, and implicit products such as 2\sqrt{3} or 3\pi. Variables,
// functions other than roots, tuples and sets make it report false.
func EvalMath(s string) (float64, bool) {
	n, ok := parseMath(s)
	if !ok || !arithmeticOnly(n) {
		return 0, false
	}
	return evalFloat(n, nil)
}

func arithmeticOnly(n *mathNode) bool {
	switch n.kind {
	case mSym, mTuple, mInterval, mSet, mRel:
		return false
	case mFunc:
		if n.name != "sqrt" {
			return false
		}
	case mConst:
		if n.name != "pi" {
			return false
		}
	}
	for _, a := range n.args {
		if !arithmeticOnly(a) {
			return false
		}
	}
	return true
}
