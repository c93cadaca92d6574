package gsm8k

import (
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/envtest"
)

// TestGSM8KV1: the default is verifiers a60a606's taskset: the test split
// for training and eval alike, the instruction in the user message, no
// system message, and "#### N" scored where a bare \boxed{} once was.
func TestGSM8KV1(t *testing.T) {
	e := envtest.NewEnv(t, "gsm8k", map[string]any{"dataset_path": envtest.GSM8KDir, "num_train_examples": 3, "num_eval_examples": 2})
	train, err := e.Examples("train")
	if err != nil || len(train) != 3 {
		t.Fatalf("train: %d, %v", len(train), err)
	}
	if ev, _ := e.Examples("eval"); len(ev) != 2 || ev[0].Prompt[0].Content != train[0].Prompt[0].Content {
		t.Fatalf("eval is not the first rows of the same split: %+v", ev)
	}
	ex := train[0] // Janet's ducks, the first test row: 18
	if len(ex.Prompt) != 1 || ex.Prompt[0].Role != "user" || !strings.HasPrefix(ex.Prompt[0].Content, v1Instruction+"\n\nJanet") || ex.Answer != "18" {
		t.Fatalf("first example %+v", ex)
	}
	for _, c := range []struct {
		completion string
		want       float64
	}{
		{"9 * 2 = 18\n#### 18", 1},
		{`#### 17` + "\n" + `\boxed{18}` + "\n#### 19", 0},
		{`so \boxed{18}`, 1}, // no "####": the reply is boxed whole
		{"<think>#### 18</think>\n#### 20", 0},
	} {
		if r := envtest.ScoreTurns(e, ex, c.completion); r.Reward != c.want || len(r.Metrics) != 1 {
			t.Errorf("%q scored %+v, want correct = %v", c.completion, r, c.want)
		}
	}
	withTrain := envtest.NewEnv(t, "gsm8k", map[string]any{"dataset_path": envtest.GSM8KDir, "split": "train", "system_prompt": "Be brief."})
	if all, _ := withTrain.Examples("eval"); len(all) != 500 || all[0].Prompt[0].Content != "Be brief." {
		t.Errorf("split = train: %d eval examples, prompt %+v", len(all), all[0].Prompt)
	}
	if v1Answer("x #### 1 #### 2 ") != "2" || v1Answer(" 42 ") != "42" {
		t.Error("v1Answer does not take the text after the last ####")
	}
	if _, err := env.New("gsm8k", map[string]any{"split": "validation"}); err == nil || !strings.Contains(err.Error(), `"validation"`) {
		t.Errorf("bad split: %v", err)
	}
}
