package gsm8k

import (
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/envtest"
	"github.com/grpo-dev/grpo/env/internal/lab"
	"github.com/grpo-dev/grpo/rubric"
)

// TestGSM8K is v0, verifiers 8d4b33247's gsm8k (v1_test.go tests v1).
func TestGSM8K(t *testing.T) {
	v0 := env.WithVersion("v0")
	e := envtest.NewEnv(t, "gsm8k", map[string]any{"dataset_path": envtest.GSM8KDir, "num_eval_examples": 10}, v0)
	eval, err := e.Examples("eval")
	if err != nil || len(eval) != 10 {
		t.Fatalf("eval: %d, %v", len(eval), err)
	}
	train, err := e.Examples("train")
	if err != nil || len(train) != 500 {
		t.Fatalf("train: %d, %v", len(train), err)
	}
	ex := eval[0] // Janet's ducks: 18
	if ex.Answer != "18" || !strings.HasPrefix(ex.Prompt[1].Content, "Janet") || ex.Prompt[0].Content != lab.BoxedSystemPrompt {
		t.Fatalf("first test example %+v", ex)
	}
	for _, c := range []struct {
		completion string
		want       float64
	}{
		{`16-3-4=9 eggs, 9*2=18. \boxed{18}`, 1},
		{"She makes 9 * 2 = 18 dollars.\n#### 18", 0}, // Lab's MathRubric reads \boxed{} only
		{`\boxed{\$18.00}`, 1},                        // math-verify drops the escaped dollar
		{`\boxed{$18.00}`, 1},
		{`<think>maybe \boxed{20}</think> \boxed{18}`, 1},
		{`\boxed{20}`, 0},
		{"the answer is 18", 0},
		{`\boxed{18`, 0},
	} {
		r := envtest.ScoreTurns(e, ex, c.completion)
		if r.Reward != c.want {
			t.Errorf("%q scored %v, want %v", c.completion, r.Reward, c.want)
		}
	}
	// Lab's MathRubric has one reward function and no format term.
	if r := envtest.ScoreTurns(e, ex, `\boxed{18}`); len(r.Metrics) != 1 || r.Metrics["correct_answer"] != 1 {
		t.Errorf("metrics %v, want only correct_answer = 1", r.Metrics)
	}
	// Every reference answer of the test split is a number the matcher reads.
	all, _ := envtest.NewEnv(t, "gsm8k", map[string]any{"dataset_path": envtest.GSM8KDir}, v0).Examples("eval")
	if len(all) != 1319 {
		t.Fatalf("test split has %d examples", len(all))
	}
	for _, ex := range all {
		if _, ok := rubric.ParseNumber(ex.Answer); !ok {
			t.Errorf("answer %q of %s is not a number", ex.Answer, ex.ID)
		}
		if r := envtest.ScoreTurns(e, ex, `\boxed{`+ex.Answer+`}`); r.Reward != 1 {
			t.Errorf("boxed reference %q scored %v", ex.Answer, r.Reward)
		}
	}
	if _, err := env.New("gsm8k", map[string]any{"dataset_path": "/nonexistent"}); err == nil || !strings.Contains(err.Error(), "/nonexistent") {
		t.Errorf("missing dataset_path: %v", err)
	}
	pq, err := envtest.NewEnv(t, "gsm8k", map[string]any{"dataset_path": envtest.GSM8KDir + "/sample.parquet"}, v0).Examples("eval")
	if err != nil || len(pq) != 20 || pq[0].Answer != "18" {
		t.Errorf("parquet file as dataset: %d examples, %v", len(pq), err)
	}
}
