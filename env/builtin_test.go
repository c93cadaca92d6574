package env

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/rubric"
)

func newEnv(t *testing.T, id string, args map[string]any) Environment {
	t.Helper()
	e, err := New(id, args)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func scoreTurns(e Environment, ex Example, turns ...string) rubric.Result {
	r := rubric.Rollout{Prompt: ex.Prompt, Answer: ex.Answer, Info: ex.Info}
	for _, t := range turns {
		r.Completion = append(r.Completion, chat.Message{Role: "assistant", Content: t})
	}
	return e.Rubric().Score(context.Background(), r)
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestReverseText(t *testing.T) {
	e := newEnv(t, "primeintellect/reverse-text", map[string]any{"dataset_name": "synthetic", "num_train_examples": 5, "num_eval_examples": 3})
	train, err := e.Examples("train")
	if err != nil || len(train) != 5 {
		t.Fatalf("train: %d examples, %v", len(train), err)
	}
	again, _ := newEnv(t, "reverse_text", map[string]any{"dataset_name": "synthetic", "num_train_examples": 5}).Examples("train")
	if !reflect.DeepEqual(train, again) {
		t.Error("same seed gave different examples")
	}
	other, _ := newEnv(t, "reverse-text", map[string]any{"dataset_name": "synthetic", "num_train_examples": 5, "seed": 1}).Examples("train")
	if reflect.DeepEqual(train, other) {
		t.Error("seed 1 gave the same examples as seed 0")
	}
	eval, _ := e.Examples("eval")
	if len(eval) != 3 || eval[0].Prompt[1].Content == train[0].Prompt[1].Content {
		t.Errorf("eval split %d examples, first equals train's", len(eval))
	}
	ex := train[0]
	if ex.Prompt[0].Content != reverseTextSystemPrompt || ex.Answer != reverseRunes(ex.Prompt[1].Content) {
		t.Fatalf("example %+v", ex)
	}
	if r := scoreTurns(e, ex, "<reversed_text>\n"+ex.Answer+"\n</reversed_text>"); r.Reward != 1 || r.Metrics["lcs_reward_func"] != 1 {
		t.Errorf("perfect reversal scored %+v", r)
	}
	// Partial: the text itself instead of its reversal scores the difflib ratio.
	partial := scoreTurns(e, ex, "<reversed_text>"+ex.Prompt[1].Content+"</reversed_text>").Reward
	if want := rubric.Ratio(ex.Prompt[1].Content, ex.Answer); !near(partial, want) || partial <= 0 || partial >= 1 {
		t.Errorf("partial scored %v, want ratio %v in (0,1)", partial, want)
	}
	if r := scoreTurns(e, ex, ex.Answer); r.Reward != 0 {
		t.Errorf("untagged answer scored %v; Prime's parser finds no answer", r.Reward)
	}
	if _, err := e.Examples("test"); err == nil {
		t.Error("unknown split accepted")
	}
	if got := reverseRunes("añb→c"); got != "c→bña" {
		t.Errorf("reverseRunes = %q", got)
	}
}

func TestGSM8K(t *testing.T) {
	e := newEnv(t, "gsm8k", map[string]any{"dataset_path": gsm8kDir, "num_eval_examples": 10})
	eval, err := e.Examples("eval")
	if err != nil || len(eval) != 10 {
		t.Fatalf("eval: %d, %v", len(eval), err)
	}
	train, err := e.Examples("train")
	if err != nil || len(train) != 500 {
		t.Fatalf("train: %d, %v", len(train), err)
	}
	ex := eval[0] // Janet's ducks: 18
	if ex.Answer != "18" || !strings.HasPrefix(ex.Prompt[1].Content, "Janet") || ex.Prompt[0].Content != boxedSystemPrompt {
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
		r := scoreTurns(e, ex, c.completion)
		if r.Reward != c.want {
			t.Errorf("%q scored %v, want %v", c.completion, r.Reward, c.want)
		}
	}
	// Lab's MathRubric has one reward function and no format term.
	if r := scoreTurns(e, ex, `\boxed{18}`); len(r.Metrics) != 1 || r.Metrics["correct_answer"] != 1 {
		t.Errorf("metrics %v, want only correct_answer = 1", r.Metrics)
	}
	// Every reference answer of the test split is a number the matcher reads.
	all, _ := newEnv(t, "gsm8k", map[string]any{"dataset_path": gsm8kDir}).Examples("eval")
	if len(all) != 1319 {
		t.Fatalf("test split has %d examples", len(all))
	}
	for _, ex := range all {
		if _, ok := rubric.ParseNumber(ex.Answer); !ok {
			t.Errorf("answer %q of %s is not a number", ex.Answer, ex.ID)
		}
		if r := scoreTurns(e, ex, `\boxed{`+ex.Answer+`}`); r.Reward != 1 {
			t.Errorf("boxed reference %q scored %v", ex.Answer, r.Reward)
		}
	}
	if _, err := New("gsm8k", map[string]any{"dataset_path": "/nonexistent"}); err == nil || !strings.Contains(err.Error(), "/nonexistent") {
		t.Errorf("missing dataset_path: %v", err)
	}
	pq, err := newEnv(t, "gsm8k", map[string]any{"dataset_path": gsm8kDir + "/sample.parquet"}).Examples("eval")
	if err != nil || len(pq) != 20 || pq[0].Answer != "18" {
		t.Errorf("parquet file as dataset: %d examples, %v", len(pq), err)
	}
}
