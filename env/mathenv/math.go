// Package mathenv is the math builtin: boxed-answer math problems scored
// by verifiers' MathRubric, on the Lab's math data or generated problems.
// It registers itself with package env on init; New gives math-python its
// data.
package mathenv

import (
	"context"
	"fmt"
	"strconv"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/lab"
	"github.com/grpo-dev/grpo/rubric"
)

// math is a boxed-answer math environment scored as verifiers 8d4b33247's
// MathRubric scores (labMathRubric: correct_answer, math-verify on the
// last \boxed{}). Prime has no env called math; its math environment is
// math_python, whose data this one reads by default with the same args:
// dataset_name = "math" is verifiers' load_example_dataset("math"), the
// hub's chiayewken/competition_math with the answer taken from the
// solution's last \boxed{} (extract_boxed_answer), and "math500" is
// HuggingFaceH4/MATH-500 (split "test"); any other name is a hub dataset
// read through question_field and answer_field. dataset_name =
// "synthetic" generates problems from seed instead (integer arithmetic,
// fractions, decimals, percentages and linear equations, each with an
// exact answer), which needs no network.

// labExampleSet is one of verifiers' load_example_dataset names.
type labExampleSet struct {
	repo, question, answer string
	// boxedSolution: the answer is the last \boxed{} of the answer field,
	// or all of it when there is none (extract_boxed_answer, not strict).
	boxedSolution bool
}

var labMathSets = map[string]labExampleSet{
	"math":    {repo: "chiayewken/competition_math", question: "problem", answer: "solution", boxedSolution: true},
	"math500": {repo: "HuggingFaceH4/MATH-500", question: "problem", answer: "answer"},
}

func init() {
	env.MustRegister(env.Spec{
		ID:          "math",
		Description: `math problems; reward = correct_answer: the last \boxed{} checked with math-verify (fractions, roots, π, intervals, symbolic equality), as verifiers 8d4b33247's MathRubric`,
		Data:        `verifiers' "math" example set (hub chiayewken/competition_math), as Lab's math_python; dataset_name = "math500", a hub id, or "synthetic" for generated problems`,
		Args: append([]env.ArgSpec{
			{Name: "system_prompt", Type: env.ArgString, Default: lab.BoxedSystemPrompt, Help: "system message"},
		}, DatasetArgs...),
		New: func(a env.Args, o env.Options) (env.Environment, error) {
			if err := lab.CheckDatasetName(a); err != nil {
				return nil, err
			}
			return New("math", a, o), nil
		},
	})
}

// New builds the math environment under id: math-python ("math-python")
// reads the same dataset args for its data.
func New(id string, a env.Args, o env.Options) env.Environment {
	return &mathEnv{id: id, args: a, opts: o}
}

type mathEnv struct {
	id   string
	args env.Args
	opts env.Options
}

func (e *mathEnv) ID() string                         { return e.id }
func (e *mathEnv) NewEpisode(env.Example) env.Episode { return env.SingleTurnEpisode{} }
func (e *mathEnv) Rubric() *rubric.Rubric             { return lab.MathRubric }

func (e *mathEnv) Examples(split string) ([]env.Example, error) {
	n, stream, hubSplit := e.args.Int("num_train_examples"), uint64(0), e.args.String("dataset_split")
	switch split {
	case "train":
	case "eval":
		n, stream, hubSplit = e.args.Int("num_eval_examples"), 1, e.args.String("eval_split")
	default:
		return nil, env.SplitErr(e.ID(), split)
	}
	system := e.args.String("system_prompt")
	if name := e.args.String("dataset_name"); name != lab.SyntheticData {
		return e.hubExamples(name, hubSplit, n, system)
	}
	if n < 0 {
		n = lab.SyntheticDefaultCount
	}
	r := lab.NewRNG(e.args.Int("seed"), stream)
	out := make([]env.Example, 0, max(n, 0))
	for i := 0; i < n; i++ {
		q, a := mathProblem(r)
		out = append(out, env.Example{ID: split + "-" + strconv.Itoa(i), Prompt: env.ChatPrompt(system, q), Answer: a})
	}
	return out, nil
}

func (e *mathEnv) hubExamples(name, hubSplit string, n int, system string) ([]env.Example, error) {
	set, known := labMathSets[name]
	if !known {
		set = labExampleSet{repo: name, question: e.args.String("question_field"), answer: e.args.String("answer_field")}
	}
	rows, err := lab.HubRows(context.Background(), e.opts, e.ID(), set.repo, e.args.String("dataset_config"), hubSplit, `dataset_name = "synthetic"`)
	if err != nil {
		return nil, err
	}
	if n >= 0 && n < len(rows) {
		rows = rows[:n]
	}
	var post func(string) string
	if set.boxedSolution {
		post = func(s string) string {
			if a, ok := rubric.BoxedAnswer(s); ok {
				return a
			}
			return s
		}
	}
	return env.QAExamples(rows, env.QAFields{Question: set.question, Answer: set.answer}, system, post)
}

func gcd(a, b int) int {
	if a < 0 {
		a = -a
	}
	if b < 0 {
		b = -b
	}
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// fracLaTeX writes p/q in lowest terms as an integer or \frac{p}{q}.
func fracLaTeX(p, q int) string {
	if q < 0 {
		p, q = -p, -q
	}
	g := gcd(p, q)
	p, q = p/g, q/g
	if q == 1 {
		return strconv.Itoa(p)
	}
	if p < 0 {
		return fmt.Sprintf(`-\frac{%d}{%d}`, -p, q)
	}
	return fmt.Sprintf(`\frac{%d}{%d}`, p, q)
}

// mathProblem generates one problem and its exact answer.
func mathProblem(r *lab.RNG) (question, answer string) {
	switch r.Intn(5) {
	case 0:
		a, b, c := r.Between(2, 99), r.Between(2, 30), r.Between(1, 500)
		return fmt.Sprintf("Compute %d \\times %d - %d.", a, b, c), strconv.Itoa(a*b - c)
	case 1:
		p1, q1, p2, q2 := r.Between(1, 9), r.Between(2, 12), r.Between(1, 9), r.Between(2, 12)
		return fmt.Sprintf("Compute \\frac{%d}{%d} + \\frac{%d}{%d}. Give the answer as a fraction in lowest terms.", p1, q1, p2, q2),
			fracLaTeX(p1*q2+p2*q1, q1*q2)
	case 2:
		// Tenths times tenths: the product has at most two decimals.
		a, b := r.Between(11, 99), r.Between(11, 99)
		return fmt.Sprintf("What is %s \\times %s? Give the answer as a decimal.", tenths(a), tenths(b)),
			strconv.FormatFloat(float64(a*b)/100, 'f', -1, 64)
	case 3:
		pct, base := 5*r.Between(1, 19), 20*r.Between(1, 25)
		return fmt.Sprintf("What is %d%% of %d?", pct, base), fracLaTeX(pct*base, 100)
	default:
		a, x, b := r.Between(2, 12), r.Between(-20, 20), r.Between(-50, 50)
		return fmt.Sprintf("Solve for x: %dx %s %d = %d.", a, sign(b), abs(b), a*x+b), strconv.Itoa(x)
	}
}

func tenths(n int) string { return strconv.FormatFloat(float64(n)/10, 'f', 1, 64) }

func sign(b int) string {
	if b < 0 {
		return "-"
	}
	return "+"
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// DatasetArgs are the arguments that choose and cut math's problems, which
// math-python reads the same way (it loads its data through New).
var DatasetArgs = []env.ArgSpec{
	{Name: "dataset_name", Type: env.ArgString, Default: "math", Help: `"math" or "math500" (verifiers' example sets), a hub dataset, or "synthetic" = problems generated from seed (no network)`},
	{Name: "dataset_split", Type: env.ArgString, Default: "train", Help: "hub split for training"},
	{Name: "eval_split", Type: env.ArgString, Default: "test", Help: "hub split for eval"},
	{Name: "num_train_examples", Type: env.ArgInt, Default: -1, Help: "first N training examples (-1 = all; synthetic: 1000)"},
	{Name: "num_eval_examples", Type: env.ArgInt, Default: 100, Help: "first N eval examples (-1 = all)"},
	{Name: "seed", Type: env.ArgInt, Default: 0, Help: "seed of the synthetic problems"},
	{Name: "dataset_config", Type: env.ArgString, Default: "", Help: "config of a hub dataset"},
	{Name: "question_field", Type: env.ArgString, Default: "problem", Help: "field with the problem (a hub dataset other than math/math500)"},
	{Name: "answer_field", Type: env.ArgString, Default: "answer", Help: "field with the final answer (a hub dataset other than math/math500)"},
}
