package mathenv

import (
	"math/big"
	"regexp"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/envtest"
	"github.com/grpo-dev/grpo/rubric"
)

// The synthetic answers are checked against math/big's exact rational
// arithmetic, computed from the numbers in the question text.
func TestMathSyntheticAnswers(t *testing.T) {
	e := envtest.NewEnv(t, "math", map[string]any{"dataset_name": "synthetic", "num_train_examples": 300})
	exs, err := e.Examples("train")
	if err != nil || len(exs) != 300 {
		t.Fatalf("%d, %v", len(exs), err)
	}
	num := regexp.MustCompile(`-?\d+(\.\d+)?`)
	rat := func(s string) *big.Rat { r, _ := new(big.Rat).SetString(s); return r }
	kinds := map[string]int{}
	for _, ex := range exs {
		q := ex.Prompt[1].Content
		ns := num.FindAllString(q, -1)
		var want *big.Rat
		switch {
		case strings.HasPrefix(q, "Compute \\frac"):
			kinds["frac"]++
			want = new(big.Rat).Add(new(big.Rat).SetFrac(rat(ns[0]).Num(), rat(ns[1]).Num()), new(big.Rat).SetFrac(rat(ns[2]).Num(), rat(ns[3]).Num()))
		case strings.HasPrefix(q, "Compute"):
			kinds["int"]++
			want = new(big.Rat).Sub(new(big.Rat).Mul(rat(ns[0]), rat(ns[1])), rat(ns[2]))
		case strings.Contains(q, "decimal"):
			kinds["dec"]++
			want = new(big.Rat).Mul(rat(ns[0]), rat(ns[1]))
		case strings.Contains(q, "%"):
			kinds["pct"]++
			want = new(big.Rat).Mul(new(big.Rat).Quo(rat(ns[0]), rat("100")), rat(ns[1]))
		default: // Solve for x: ax ± b = c
			kinds["eq"]++
			a, b, c := rat(ns[0]), rat(ns[1]), rat(ns[2])
			if strings.Contains(q, "x - ") {
				b.Neg(b)
			}
			want = new(big.Rat).Quo(new(big.Rat).Sub(c, b), a)
		}
		wantText := want.RatString()
		if !rubric.MathEquivalent(ex.Answer, wantText) {
			t.Fatalf("%q: answer %q, exact %s", q, ex.Answer, wantText)
		}
		if r := envtest.ScoreTurns(e, ex, `so \boxed{`+wantText+`}`); r.Reward != 1 {
			t.Errorf("%q: boxed %s scored %v (answer %q)", q, wantText, r.Reward, ex.Answer)
		}
		if r := envtest.ScoreTurns(e, ex, `\boxed{`+new(big.Rat).Add(want, big.NewRat(1, 7)).RatString()+`}`); r.Reward != 0 {
			t.Errorf("%q: a wrong answer scored %v", q, r.Reward)
		}
	}
	if len(kinds) != 5 {
		t.Errorf("problem kinds drawn: %v", kinds)
	}
	ex := env.Example{Answer: `\frac{19}{12}`}
	for completion, want := range map[string]float64{`\boxed{\frac{19}{12}}`: 1, `\boxed{19/12}`: 1, `\boxed{1.5833}`: 0, "19/12": 0, `\boxed{\dfrac{19}{12}}`: 1} {
		if r := envtest.ScoreTurns(e, ex, completion); r.Reward != want {
			t.Errorf("%q scored %v, want %v", completion, r.Reward, want)
		}
	}
}
